/**
 * The HTML format: one self-contained page. Nothing is loaded from anywhere (no script, no font, no
 * image, no stylesheet link), a Content-Security-Policy meta tag forbids everything but the inline style
 * (`default-src 'none'; style-src 'unsafe-inline'`), and every piece of conversation text is escaped
 * (`& < > " '`) and shown as text: links are never turned into anchors, so a `javascript:` URL stays
 * inert. Tool calls and tool results are shown in `<details>`.
 */
import type { NormalizedSnapshot, SnapshotMessage } from '../types.js';
import {
  displayTitle,
  formatTimestamp,
  messageText,
  metadataRows,
  roleLabel,
  toolCalls,
  toolName,
  visibleMessages,
} from './common.js';

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes the five characters that are special in HTML text and attribute values. */
export function htmlEscape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** The page's only policy: nothing may load or run; the inline stylesheet may apply. */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'";

const STYLE = `
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --line: #d1d9e0;
  --user: #ddf4ff; --assistant: #f6f8fa; --tool: #fff8c5; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d;
  --user: #0c2d48; --assistant: #151b23; --tool: #2e2a12; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header, main { max-width: 60rem; margin: 0 auto; padding: 1rem 1.25rem; }
header { border-bottom: 1px solid var(--line); }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0; color: var(--muted); }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
section { border: 1px solid var(--line); border-radius: 8px; margin: 0 0 1rem; padding: .75rem 1rem; }
section.user { background: var(--user); }
section.assistant { background: var(--assistant); }
section.tool { background: var(--tool); }
h2 { font-size: .95rem; margin: 0 0 .5rem; }
h2 .ts { font-weight: 400; color: var(--muted); margin-left: .5rem; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.code { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; margin: .5rem 0 0; }
details { margin-top: .5rem; }
summary { cursor: pointer; font-weight: 600; overflow-wrap: anywhere; }
`;

function detailsBlock(kind: string, summary: string, body: string): string {
  return (
    `<details class="${kind}"><summary>${htmlEscape(summary)}</summary>` +
    `<div class="code">${htmlEscape(body)}</div></details>`
  );
}

function heading(label: string, message: SnapshotMessage): string {
  const timestamp = formatTimestamp(message.timestamp);
  const ts = timestamp === undefined ? '' : `<span class="ts">${htmlEscape(timestamp)}</span>`;
  return `<h2>${htmlEscape(label)}${ts}</h2>`;
}

function roleClass(role: string): string {
  return role === 'user' || role === 'assistant' || role === 'tool' ? role : 'other';
}

function renderMessage(message: SnapshotMessage): string {
  const parts: string[] = [];
  const text = messageText(message.content);
  if (message.role === 'tool') {
    const name = toolName(message);
    parts.push(heading(`Tool: ${name}`, message));
    parts.push(detailsBlock('tool-result', `Result: ${name}`, text));
  } else {
    parts.push(heading(roleLabel(message.role), message));
    if (text !== '') parts.push(`<div class="text">${htmlEscape(text)}</div>`);
    for (const call of toolCalls(message)) {
      parts.push(detailsBlock('tool-call', `Tool call: ${call.name}`, call.body));
    }
  }
  return `<section class="message ${roleClass(message.role)}">\n${parts.join('\n')}\n</section>`;
}

export function renderHtml(snapshot: NormalizedSnapshot): string {
  const title = `Session: ${displayTitle(snapshot)}`;
  const meta = metadataRows(snapshot)
    .map((row) => {
      const value = htmlEscape(row.value);
      return `<dt>${htmlEscape(row.label)}</dt><dd>${row.code ? `<code>${value}</code>` : value}</dd>`;
    })
    .join('\n');
  const messages = visibleMessages(snapshot);
  const body = messages.length === 0 ? '<p>No messages found.</p>' : messages.map(renderMessage).join('\n');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${htmlEscape(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${htmlEscape(title)}</h1>
<dl>
${meta}
</dl>
</header>
<main>
${body}
</main>
</body>
</html>
`;
}
