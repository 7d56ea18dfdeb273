/**
 * Text for a terminal: strings that came from a message, a session key or a file name are shown with every
 * character a terminal would act on written out as an escape, and laid out by display width (string-width).
 */
import stringWidth from 'string-width';

/**
 * What a terminal acts on or a reader cannot see: the C0 controls (ESC starts every escape sequence; CR, BS
 * and NUL rewrite or hide what is already on the line), DEL, the C1 controls (U+009B is a one-character CSI),
 * the bidirectional overrides and isolates (they reorder what is shown), and the Unicode line and paragraph
 * separators.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE_ALL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex -- as above, minus LF
const UNSAFE_BUT_LF = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, '0');
}

function escapeText(c: string): string {
  const named = NAMED[c];
  if (named !== undefined) return named;
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${hex(code, 2)}` : `\\u{${hex(code, 4)}}`;
}

function escapeJson(c: string): string {
  return `\\u${hex(c.charCodeAt(0), 4)}`;
}

export interface TermSafeOptions {
  /** Keep LF as a line break (a multi-line dump); CR is still escaped. Default false. */
  readonly keepNewlines?: boolean;
  /** Write escapes as JSON does (`\u001b`), for text that is JSON. Default: `\x1b`, `\n`, `\u{202e}`. */
  readonly json?: boolean;
}

/**
 * `s` with every control character, escape-sequence introducer and bidirectional control written out as a
 * visible escape (`\x1b`, `\r`, `\n`, `\x00`, `\u{202e}`): safe to print on a terminal. Everything else,
 * backslashes included, is unchanged, so text without such characters comes back identical.
 */
export function termSafe(s: string, options: TermSafeOptions = {}): string {
  if (!UNSAFE.test(s)) return s;
  const pattern = options.keepNewlines === true ? UNSAFE_BUT_LF : UNSAFE_ALL;
  return s.replace(pattern, options.json === true ? escapeJson : escapeText);
}

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** The user-perceived characters of `s` (👨‍👩‍👧 is one, e + U+0301 is one), each with its columns. */
function* clusters(s: string): Generator<{ readonly text: string; readonly width: number }> {
  for (const { segment } of graphemes.segment(s)) yield { text: segment, width: stringWidth(segment) };
}

/**
 * Columns a (terminal-safe) string takes on a terminal, as `string-width` measures it: East Asian wide
 * characters and emoji (👨‍👩‍👧 included) are 2, combining marks and zero-width characters 0, colour escapes 0.
 */
export function displayWidth(s: string): number {
  // Printable ASCII is one column a character (string-width says the same, far slower): tables of 100,000 rows.
  return PRINTABLE_ASCII.test(s) ? s.length : stringWidth(s);
}

/** `s` cut to at most `width` columns, ending in `…` when something was cut; never splits a character. */
export function truncate(s: string, width: number): string {
  if (displayWidth(s) <= width) return s;
  if (width <= 0) return '';
  let out = '';
  let w = 0;
  for (const c of clusters(s)) {
    if (w + c.width > width - 1) break;
    out += c.text;
    w += c.width;
  }
  return `${out}…`;
}

/** Splits a word longer than `width` into pieces of at most `width` columns. */
function hardBreak(word: string, width: number): string[] {
  const pieces: string[] = [];
  let cur = '';
  let w = 0;
  for (const c of clusters(word)) {
    if (w + c.width > width && cur !== '') {
      pieces.push(cur);
      cur = '';
      w = 0;
    }
    cur += c.text;
    w += c.width;
  }
  if (cur !== '') pieces.push(cur);
  return pieces;
}

/**
 * Word-wraps `s` (one line, terminal-safe) into lines of at most `width` columns (`nextWidth` for the lines
 * after the first); leading spaces are kept on the first line, words longer than a line are broken.
 */
export function wrap(s: string, width: number, nextWidth = width): string[] {
  if (width <= 0 || displayWidth(s) <= width) return [s];
  const lead = /^ */.exec(s)?.[0] ?? '';
  const lines: string[] = [];
  let limit = width;
  let cur = lead;
  let w = lead.length;
  let fresh = true; // nothing but the lead on the current line
  const push = (): void => {
    lines.push(cur);
    cur = '';
    w = 0;
    fresh = true;
    limit = nextWidth;
  };
  for (const word of s.slice(lead.length).split(' ')) {
    const ww = displayWidth(word);
    if (!fresh && w + 1 + ww <= limit) {
      cur += ` ${word}`;
      w += 1 + ww;
      continue;
    }
    if (!fresh) push();
    if (w + ww <= limit) {
      cur += word;
      w += ww;
      fresh = false;
      continue;
    }
    for (const piece of hardBreak(word, Math.max(1, limit - w))) {
      if (!fresh) push();
      cur += piece;
      w += displayWidth(piece);
      fresh = false;
    }
  }
  lines.push(cur);
  return lines;
}

/**
 * Wraps a line of prose to `width` columns; continuation lines get `indent`. For the text under tables
 * (summaries, details), so no line of output is wider than the terminal.
 */
export function wrapLine(s: string, width: number, indent = ''): string[] {
  const lines = wrap(s, width, Math.max(10, width - displayWidth(indent)));
  return lines.map((l, i) => (i === 0 ? l : `${indent}${l}`));
}

/** The width output is laid out for: the terminal's columns, else `$COLUMNS`, else 80. */
export function outputWidth(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): number {
  const tty: unknown = stream.isTTY;
  if (tty === true && typeof stream.columns === 'number' && stream.columns >= 20) return stream.columns;
  const fromEnv = Number(env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv >= 20) return fromEnv;
  return 80;
}
