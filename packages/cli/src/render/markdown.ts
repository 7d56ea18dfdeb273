/**
 * The Markdown format, laid out as the reference's `render_sessions_export(…, fmt="markdown")`: a
 * `# Session:` heading, metadata bullets, one `##` section per message, the system prompt and tool rows in
 * `<details>`. Untrusted text can never add live HTML or break out of its message:
 * - the assistant's answers and the system prompt stay Markdown, neutralised by ./md-neutralise.ts (raw
 *   HTML escaped, only http/https/mailto links, images as links, open fences closed); an answer that
 *   cannot be proven inert that way is fenced like the rest;
 * - user messages, tool results and tool-call arguments are verbatim inside a code fence longer than any
 *   backtick run they contain, so no line of theirs can close it, start a heading, open HTML or end a
 *   `<details>` block;
 * - headings and the title have line breaks collapsed and Markdown/HTML punctuation backslash-escaped;
 * - identifiers are code spans delimited by more backticks than they contain;
 * - `<summary>` text is HTML-escaped.
 */
import type { NormalizedSnapshot } from '../types.js';
import { htmlEscape } from './html.js';
import { neutraliseMarkdown } from './md-neutralise.js';
import {
  displayTitle,
  formatTimestamp,
  messageText,
  metadataRows,
  oneLine,
  roleLabel,
  toolCalls,
  toolName,
  visibleMessages,
} from './common.js';

function longestRun(text: string, char: string): number {
  let longest = 0;
  let current = 0;
  for (const c of text) {
    current = c === char ? current + 1 : 0;
    if (current > longest) longest = current;
  }
  return longest;
}

/** A fenced code block no content can close early. */
export function fenced(text: string, language: string): string {
  const fence = '`'.repeat(Math.max(3, longestRun(text, '`') + 1));
  return `${fence}${language}\n${text}\n${fence}`;
}

/** Inline text for headings and bullets: one line, with every character Markdown or HTML could act on escaped. */
export function inlineText(text: string): string {
  return oneLine(text).replace(/[\\`*_[\]<>&!|~#]/g, (c) => `\\${c}`);
}

/** A code span that shows `text` exactly, whatever backticks or spaces it holds. */
export function codeSpan(text: string): string {
  const value = oneLine(text);
  const ticks = '`'.repeat(longestRun(value, '`') + 1);
  const pad = value.startsWith('`') || value.endsWith('`') || value.startsWith(' ') || value.endsWith(' ') ? ' ' : '';
  return `${ticks}${pad}${value}${pad}${ticks}`;
}

function details(summary: string, body: string, language: string): string[] {
  return detailsOf(summary, fenced(body, language));
}

function detailsOf(summary: string, block: string): string[] {
  return [`<details><summary>${htmlEscape(oneLine(summary))}</summary>`, '', block, '', '</details>', ''];
}

/** Markdown kept as Markdown when it can be neutralised, else shown verbatim in a fence. */
function markdownBlock(text: string): string {
  return neutraliseMarkdown(text) ?? fenced(text, 'text');
}

/** The whole `.md` document; the same snapshot always gives the same text. */
export function renderMarkdown(snapshot: NormalizedSnapshot): string {
  const lines: string[] = [`# Session: ${inlineText(displayTitle(snapshot))}`];
  for (const row of metadataRows(snapshot)) {
    lines.push(`- ${row.label}: ${row.code ? codeSpan(row.value) : inlineText(row.value)}`);
  }
  lines.push('');

  const messages = visibleMessages(snapshot);
  if (messages.length === 0) lines.push('_No messages found._', '');
  for (const message of messages) {
    const timestamp = formatTimestamp(message.timestamp);
    const suffix = timestamp === undefined ? '' : ` - ${inlineText(timestamp)}`;
    const text = messageText(message.content);
    if (message.role === 'tool') {
      const name = toolName(message);
      lines.push(`## Tool: ${inlineText(name)}${suffix}`, '');
      lines.push(...details(name, text, 'text'));
      continue;
    }
    if (message.role === 'system') {
      lines.push(`## System${suffix}`, '');
      lines.push(...detailsOf('System prompt', text === '' ? '_(empty)_' : markdownBlock(text)));
      continue;
    }
    lines.push(`## ${inlineText(roleLabel(message.role))}${suffix}`, '');
    if (text !== '') lines.push(message.role === 'assistant' ? markdownBlock(text) : fenced(text, 'text'), '');
    for (const call of toolCalls(message)) {
      lines.push(...details(`Tool call: ${call.name}`, call.body, call.json ? 'json' : 'text'));
    }
  }

  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return `${lines.join('\n')}\n`;
}
