/**
 * The HTML format: one self-contained page. Nothing is loaded from anywhere (no script, no font, no
 * image, no stylesheet link) and a Content-Security-Policy meta tag forbids everything but the inline
 * style. The assistant's answers and the system prompt are rendered from Markdown (./markdown-html.ts:
 * raw HTML off, links only http/https/mailto, images shown as links); everything else (user messages,
 * tool calls and results, the title, ids) is escaped text. The system prompt, tool calls and tool results
 * are in `<details>`: collapsed on screen, open in print.
 */
import type { NormalizedSnapshot, SnapshotMessage } from '../types.js';
import { escapeHtml, markdownToHtml } from './markdown-html.js';
import { STYLE } from './style.js';
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

/** Escapes the five characters that are special in HTML text and attribute values. */
export const htmlEscape = escapeHtml;

/**
 * The page's only policy: no script, image, frame, font, connection, form target or base URL; the inline
 * stylesheet may apply. `default-src 'none'` already covers scripts and images; they are named anyway.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'none'; img-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

function codeBlock(body: string, language: string): string {
  const cls = language === '' ? '' : ` class="language-${language}"`;
  return `<pre><code${cls}>${htmlEscape(body)}</code></pre>`;
}

/** A block collapsed on screen and shown open in print (see the stylesheet). */
function detailsBlock(kind: string, summary: string, content: string): string {
  return `<details class="${kind}"><summary>${htmlEscape(summary)}</summary>\n<div class="body">${content}</div></details>`;
}

function heading(label: string, message: SnapshotMessage): string {
  const timestamp = formatTimestamp(message.timestamp);
  const ts = timestamp === undefined ? '' : `<span class="ts">${htmlEscape(timestamp)}</span>`;
  return `<h2 class="role">${htmlEscape(label)}${ts}</h2>`;
}

function roleClass(role: string): string {
  return role === 'user' || role === 'assistant' || role === 'tool' || role === 'system' ? role : 'other';
}

function renderMessage(message: SnapshotMessage): string {
  const parts: string[] = [];
  const text = messageText(message.content);
  if (message.role === 'tool') {
    const name = toolName(message);
    parts.push(heading(`Tool: ${name}`, message));
    parts.push(detailsBlock('tool-result', `Result: ${name}`, codeBlock(text, '')));
  } else if (message.role === 'system') {
    parts.push(heading('System', message));
    parts.push(detailsBlock('system-prompt', 'System prompt', `<div class="markdown">${markdownToHtml(text)}</div>`));
  } else {
    parts.push(heading(roleLabel(message.role), message));
    if (text !== '') {
      // The assistant's answers are Markdown; what a user typed is shown as typed.
      parts.push(message.role === 'assistant' ? `<div class="markdown">${markdownToHtml(text)}</div>` : `<div class="text">${htmlEscape(text)}</div>`);
    }
    for (const call of toolCalls(message)) {
      parts.push(detailsBlock('tool-call', `Tool call: ${call.name}`, codeBlock(call.body, call.json ? 'json' : '')));
    }
  }
  return `<section class="message ${roleClass(message.role)}">\n${parts.join('\n')}\n</section>`;
}

/**
 * The whole page. Guarantee: every tag and attribute comes from this renderer or from markdown-it with raw
 * HTML off and links limited to http, https and mailto; nothing in it loads or runs (see the CSP).
 */
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
