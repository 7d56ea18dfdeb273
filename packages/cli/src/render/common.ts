/**
 * What the Markdown and HTML renderers read out of a snapshot: the visible messages, their text, tool
 * calls and timestamps. Nothing here escapes; each renderer escapes for its own syntax.
 */
import type { NormalizedSnapshot, SnapshotMessage } from '../types.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON with object keys sorted, for structured content shown as text. */
function sortedJson(value: unknown, indent?: number): string {
  const text = JSON.stringify(
    value,
    (_key, v: unknown) => {
      if (!isRecord(v)) return v;
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) sorted[k] = v[k];
      return sorted;
    },
    indent,
  ) as string | undefined;
  return text ?? String(value);
}

function textOfPart(part: unknown): string {
  if (typeof part === 'string') return part;
  if (isRecord(part)) {
    for (const key of ['text', 'content']) {
      const value = part[key];
      if (typeof value === 'string') return value;
    }
    return sortedJson(part);
  }
  return sortedJson(part);
}

/**
 * The text of a message's content: a string as it is; an array of parts joined by newlines (each part's
 * `text`/`content`, else its JSON); an object's `text`/`content`, else its JSON; null/absent as empty.
 */
export function messageText(content: unknown): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) => textOfPart(part))
      .filter((text) => text !== '')
      .join('\n');
  }
  return textOfPart(content);
}

/**
 * A timestamp for headings: epoch seconds → UTC ISO 8601 to the second (`2025-01-02T03:04:05Z`), a
 * string as it is, anything else (or an unrepresentable number) → undefined / its text.
 */
export function formatTimestamp(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) {
    const date = new Date(Math.floor(value) * 1000);
    if (Number.isNaN(date.getTime())) return String(value);
    return `${date.toISOString().slice(0, 19)}Z`;
  }
  if (typeof value === 'string' && value.trim() !== '') return value;
  return undefined;
}

/** One tool call, ready to show: its function name and its arguments (pretty JSON when they are JSON). */
export interface ToolCallView {
  readonly name: string;
  readonly body: string;
  readonly json: boolean;
}

function argumentsView(args: unknown): { body: string; json: boolean } {
  if (typeof args === 'string') {
    try {
      return { body: JSON.stringify(JSON.parse(args) as unknown, null, 2), json: true };
    } catch {
      return { body: args, json: false };
    }
  }
  if (args === undefined) return { body: '', json: false };
  return { body: JSON.stringify(args, null, 2), json: true };
}

function toolCallView(call: unknown): ToolCallView {
  if (isRecord(call)) {
    const fn = isRecord(call.function) ? call.function : undefined;
    const rawName = fn?.name ?? call.name;
    const name = typeof rawName === 'string' && rawName.trim() !== '' ? rawName : 'tool';
    const args = fn !== undefined ? fn.arguments : 'arguments' in call ? call.arguments : call;
    return { name, ...argumentsView(args) };
  }
  return { name: 'tool', ...argumentsView(call) };
}

/** The tool calls of an assistant message (an array, or the JSON text of one, as the session store keeps it). */
export function toolCalls(message: SnapshotMessage): readonly ToolCallView[] {
  let value = message.tool_calls;
  if (value === undefined || value === null || value === '') return [];
  if (typeof value === 'string') {
    const text = value;
    try {
      value = JSON.parse(text) as unknown;
    } catch {
      return [{ name: 'tool', body: text, json: false }];
    }
  }
  if (Array.isArray(value)) return value.map((call: unknown) => toolCallView(call));
  return [toolCallView(value)];
}

/** The tool's name for a `tool` row. */
export function toolName(message: SnapshotMessage): string {
  for (const candidate of [message.tool_name, message.name]) {
    if (typeof candidate === 'string' && candidate.trim() !== '') return candidate;
  }
  return 'tool';
}

/** `user` → `User`, `assistant` → `Assistant`, anything else title-cased (`function_call` → `Function_Call`). */
export function roleLabel(role: string): string {
  if (role === 'user') return 'User';
  if (role === 'assistant') return 'Assistant';
  const lower = role.toLowerCase();
  const titled = lower.replace(/(^|[^a-z])([a-z])/g, (_m, before: string, letter: string) => before + letter.toUpperCase());
  return titled.trim() === '' ? 'Message' : titled;
}

/** The messages a reader sees: every message, system prompts included (shown collapsed by both renderers). */
export function visibleMessages(snapshot: NormalizedSnapshot): readonly SnapshotMessage[] {
  return snapshot.messages;
}

/** The session's display title: its title, else its id, else `unknown` (as the reference). */
export function displayTitle(snapshot: NormalizedSnapshot): string {
  const title = typeof snapshot.title === 'string' ? snapshot.title.trim() : '';
  if (title !== '') return title;
  return snapshot.id !== null && snapshot.id !== '' ? snapshot.id : 'unknown';
}

/** The metadata rows both renderers show, in the reference's order. Empty values are left out. */
export interface MetadataRow {
  readonly label: string;
  readonly value: string;
  /** Shown as code (identifiers) rather than prose. */
  readonly code: boolean;
}

export function metadataRows(snapshot: NormalizedSnapshot): readonly MetadataRow[] {
  const rows: MetadataRow[] = [
    { label: 'Session ID', value: snapshot.id !== null && snapshot.id !== '' ? snapshot.id : 'unknown', code: true },
  ];
  if (typeof snapshot.source === 'string' && snapshot.source !== '') {
    rows.push({ label: 'Source', value: snapshot.source, code: true });
  }
  if (snapshot.model !== null && snapshot.model !== '') rows.push({ label: 'Model', value: snapshot.model, code: true });
  if (typeof snapshot.title === 'string' && snapshot.title.trim() !== '') {
    rows.push({ label: 'Title', value: snapshot.title, code: false });
  }
  const started = formatTimestamp(snapshot.started_at);
  if (started !== undefined) rows.push({ label: 'Started', value: started, code: false });
  rows.push({ label: 'Messages', value: String(snapshot.messages.length), code: false });
  return rows;
}

/** Collapses every line break (CR, LF, CRLF, and the Unicode line/paragraph separators) into one space. */
export function oneLine(text: string): string {
  return text.replace(/\r\n|[\r\n\u2028\u2029\u0085\f\v]/g, ' ').trim();
}
