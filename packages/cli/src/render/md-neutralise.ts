/**
 * Message Markdown for the `.md` export: kept as Markdown, with everything that would become live markup
 * in a renderer that allows raw HTML taken out of play, outside code (code spans and blocks are left
 * byte-identical):
 * - `<` that could open a tag, comment, declaration or processing instruction is backslash-escaped
 *   (`\<script>` renders as the text `<script>`); an autolink is kept only for http, https or mailto;
 * - a link or reference definition whose destination has a scheme other than http, https or mailto
 *   loses its link syntax (`[x]\(javascript:…)` renders as text);
 * - an image becomes a link to its URL (`\![alt](url)`), so viewing the file fetches nothing;
 * - a fence the message leaves open is closed, so it cannot swallow the rest of the transcript.
 * The result is then parsed with raw HTML enabled and checked: no HTML token, no image, no link with
 * another scheme, and a paragraph after the message is still a paragraph. When that check fails the
 * caller shows the message verbatim in a code fence instead (`undefined`).
 */
import MarkdownIt from 'markdown-it';
import { isAllowedLink } from './markdown-html.js';

const ASCII_PUNCTUATION = /[!-/:-@[-`{-~]/;
const AUTOLINK = /^<([A-Za-z][A-Za-z0-9+.-]{1,31}):[^<>\s]*>/;
const EMAIL_AUTOLINK = /^<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*>/;
/** A destination that is safe in any renderer: an allowed scheme, or a plain relative path without entities or escapes. */
const SAFE_DESTINATION = /^(?:https?:\/\/|mailto:|[A-Za-z0-9._~/#?-][^\s:&\\()<>]*(?:[\s)>]|$))/i;
const SENTINEL = 'hermes-end-of-message-4d1f';

type Token = ReturnType<MarkdownIt['parse']>[number];

const plain = new MarkdownIt('default', { html: false });
/** The strictest reader's opposite: raw HTML on, every link scheme accepted. */
const permissive = new MarkdownIt('default', { html: true, linkify: true });
permissive.validateLink = () => true;

function backtickRun(text: string, at: number): number {
  let end = at;
  while (text[end] === '`') end += 1;
  return end - at;
}

/** Where the code span opened by `run` backticks at `at` ends (exclusive), or -1 when it is never closed. */
function codeSpanEnd(text: string, at: number, run: number): number {
  let i = at + run;
  while (i < text.length) {
    const next = text.indexOf('`', i);
    if (next === -1) return -1;
    const length = backtickRun(text, next);
    if (length === run) return next + length;
    i = next + length;
  }
  return -1;
}

function destinationIsSafe(rest: string): boolean {
  return SAFE_DESTINATION.test(rest.replace(/^[ \t]*\n?[ \t]*<?/, ''));
}

/** Escapes one paragraph's worth of inline text (no blank line inside), leaving code spans as they are. */
function escapeInline(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text.charAt(i);
    const next = text[i + 1] ?? '';
    if (c === '\\' && ASCII_PUNCTUATION.test(next)) {
      out += c + next;
      i += 2;
    } else if (c === '`') {
      const run = backtickRun(text, i);
      const end = codeSpanEnd(text, i, run);
      const stop = end === -1 ? i + run : end;
      out += text.slice(i, stop);
      i = stop;
    } else if (c === '<') {
      const rest = text.slice(i);
      const auto = AUTOLINK.exec(rest) ?? EMAIL_AUTOLINK.exec(rest);
      if (auto !== null && (auto[1] === undefined || isAllowedLink(auto[0].slice(1, -1)))) {
        out += auto[0];
        i += auto[0].length;
      } else {
        out += /[A-Za-z!?/]/.test(next) ? '\\<' : '<';
        i += 1;
      }
    } else if (c === '!' && next === '[') {
      out += '\\!';
      i += 1;
    } else if (c === ']' && (next === '(' || next === ':') && !destinationIsSafe(text.slice(i + 2))) {
      out += `]\\${next}`;
      i += 2;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

/** Lines (0-based) that markdown-it reads as code: fenced and indented blocks. */
function codeLines(source: string): Set<number> {
  const lines = new Set<number>();
  for (const token of plain.parse(source, {})) {
    if ((token.type === 'fence' || token.type === 'code_block') && token.map !== null) {
      for (let line = token.map[0]; line < token.map[1]; line += 1) lines.add(line);
    }
  }
  return lines;
}

function escapeOutsideCode(source: string): string {
  const code = codeLines(source);
  const out: string[] = [];
  let paragraph: string[] = [];
  const flush = (): void => {
    // Code spans never cross a blank line or a code block, so each run of prose lines is scanned on its own.
    if (paragraph.length > 0) out.push(escapeInline(paragraph.join('\n')));
    paragraph = [];
  };
  source.split('\n').forEach((line, index) => {
    if (code.has(index) || line.trim() === '') {
      flush();
      out.push(line);
    } else {
      paragraph.push(line);
    }
  });
  flush();
  return out.join('\n');
}

function walk(tokens: readonly Token[], visit: (token: Token) => boolean): boolean {
  return tokens.every((token) => visit(token) && walk(token.children ?? [], visit));
}

function isInert(token: Token): boolean {
  if (token.type === 'html_block' || token.type === 'html_inline' || token.type === 'image') return false;
  if (token.type === 'link_open') {
    const href = token.attrGet('href') ?? '';
    return isAllowedLink(href) || !/^[^/?#]*:/.test(href);
  }
  return true;
}

type Check = 'ok' | 'open' | 'live';

function check(markdown: string): { result: Check; tokens: Token[] } {
  const tokens = permissive.parse(`${markdown}\n\n${SENTINEL}\n`, {});
  if (!walk(tokens, isInert)) return { result: 'live', tokens };
  const [open, inline, close] = tokens.slice(-3);
  const closed = open?.type === 'paragraph_open' && open.level === 0 && inline?.content === SENTINEL && close?.type === 'paragraph_close';
  return { result: closed ? 'ok' : 'open', tokens };
}

/**
 * `text` as Markdown that renders the same in any CommonMark renderer but can carry no live HTML, image or
 * non-http(s)/mailto link, and cannot run past its own end; `undefined` when that cannot be guaranteed.
 */
export function neutraliseMarkdown(text: string): string | undefined {
  let markdown = escapeOutsideCode(text.replace(/\r\n?/g, '\n').replaceAll('\0', '\uFFFD')).replace(/\n+$/, '');
  let verdict = check(markdown);
  if (verdict.result === 'open') {
    const fence = [...verdict.tokens].reverse().find((t) => t.type === 'fence' && t.level === 0);
    if (fence !== undefined) markdown = `${markdown}\n${fence.markup}`;
    verdict = check(markdown);
  }
  return verdict.result === 'ok' ? markdown : undefined;
}
