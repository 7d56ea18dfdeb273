/**
 * The operator's listing of `<home>/pending_messages/`: one entry per spool file, read (never written) with
 * @hermes/gateway's own tolerant reader and payload classifier, in recovery order.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { classifyPayload, orderingKey, parseJsonTolerant, type PayloadKind, spoolLocation } from '@hermes/gateway';
import { CliError } from '../lib/output.js';

export type EntryStatus = 'payload' | 'snapshot' | 'bad' | 'foreign' | 'unparseable';

export interface SpoolEntry {
  /** The 32-hex id of `pending-<id>.json` (or the whole file name for a non-standard name). */
  readonly id: string;
  readonly name: string;
  readonly path: string;
  readonly status: EntryStatus;
  readonly kind: PayloadKind | 'unknown' | null;
  readonly sessionKey: string | null;
  readonly sessionId: string | null;
  /** Epoch seconds from the payload, or null. */
  readonly ts: number | null;
  readonly seq: number | null;
  readonly reason: string | null;
  readonly bytes: number;
  readonly mode: string;
  readonly uid: number;
  /** Messages in an agent-history snapshot. */
  readonly messages: number | null;
  /** The start of the message text, for the listing. */
  readonly preview: string | null;
}

export interface SpoolListing {
  readonly dir: string;
  readonly exists: boolean;
  readonly entries: readonly SpoolEntry[];
  /** fs-policy temp files (interrupted writes) in the directory; the doctor reports and sweeps them. */
  readonly tempFiles: number;
}

const NAME = /^pending-([0-9a-f]{32})\.json(\.bad)?$/;

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function record(v: unknown): Record<string, unknown> | null {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

function previewOf(payload: Record<string, unknown>): string | null {
  const data = record(payload.data);
  const text = str(data?.text) ?? str(record(data?.message)?.content);
  if (text === null) return null;
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > 48 ? `${one.slice(0, 47)}…` : one;
}

/** Reads a spool file as the gateway would (UTF-8, BOM tolerated, NaN/Infinity accepted). */
export function readPayload(p: string): unknown {
  return parseJsonTolerant(new TextDecoder('utf-8', { fatal: true }).decode(fs.readFileSync(p)));
}

function entryOf(dir: string, name: string): SpoolEntry | null {
  const p = path.join(dir, name);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch {
    return null;
  }
  if (!st.isFile()) return null;
  const m = NAME.exec(name);
  const isBad = name.endsWith('.bad');
  if (!name.endsWith('.json') && !isBad) return null;
  const base = {
    id: m?.[1] ?? name,
    name,
    path: p,
    bytes: st.size,
    mode: (st.mode & 0o7777).toString(8).padStart(4, '0'),
    uid: st.uid,
  };
  let payload: unknown;
  try {
    payload = readPayload(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const status: EntryStatus = code === 'EACCES' || code === 'EPERM' ? 'foreign' : isBad ? 'bad' : 'unparseable';
    return { ...base, status, kind: null, sessionKey: null, sessionId: null, ts: null, seq: null, reason: null, messages: null, preview: null };
  }
  const obj = record(payload);
  if (obj === null) {
    return { ...base, status: isBad ? 'bad' : 'unparseable', kind: null, sessionKey: null, sessionId: null, ts: null, seq: null, reason: null, messages: null, preview: null };
  }
  const kind = classifyPayload(obj);
  const key = orderingKey(obj);
  const data = record(obj.data);
  return {
    ...base,
    status: isBad ? 'bad' : kind === 'agent_history' ? 'snapshot' : kind === 'unknown' ? 'unparseable' : 'payload',
    kind,
    sessionKey: str(obj.session_key),
    sessionId: str(obj.session_id) ?? str(data?.session_id),
    ts: key.ts === 0 ? null : key.ts,
    seq: key.seq === -1 ? null : key.seq,
    reason: str(obj.reason),
    messages: Array.isArray(obj.messages) ? obj.messages.length : null,
    preview: previewOf(obj),
  };
}

export function listSpool(home: string): SpoolListing {
  const { dir } = spoolLocation({ home });
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { dir, exists: false, entries: [], tempFiles: 0 };
    throw new CliError(`cannot read ${dir} (${code ?? 'error'})`, {
      hint: 'run as the spool\'s owner (each uid recovers its own payloads) or as root',
    });
  }
  const entries: SpoolEntry[] = [];
  let tempFiles = 0;
  for (const name of names) {
    if (name.startsWith('.')) {
      if (name.endsWith('.tmp') || name.endsWith('.bak')) tempFiles++;
      continue;
    }
    const e = entryOf(dir, name);
    if (e !== null) entries.push(e);
  }
  // Recovery order: (ts, seq, name).
  entries.sort((a, b) => (a.ts ?? 0) - (b.ts ?? 0) || (a.seq ?? -1) - (b.seq ?? -1) || a.name.localeCompare(b.name));
  return { dir, exists: true, entries, tempFiles };
}

/** Finds one entry by id, unique id prefix (4+ characters) or file name. */
export function findEntry(listing: SpoolListing, ref: string): SpoolEntry {
  const wanted = ref.trim();
  const exact = listing.entries.filter((e) => e.id === wanted || e.name === wanted || e.name === path.basename(wanted));
  if (exact.length === 1 && exact[0] !== undefined) return exact[0];
  if (wanted.length >= 4) {
    const prefixed = listing.entries.filter((e) => e.id.startsWith(wanted) || e.name.startsWith(wanted));
    if (prefixed.length === 1 && prefixed[0] !== undefined) return prefixed[0];
    if (prefixed.length > 1) {
      throw new CliError(`${ref} matches ${prefixed.length} spool files`, { hint: 'give more characters of the id (hermes-fs pending list)' });
    }
  }
  throw new CliError(`no spool file ${ref} in ${listing.dir}`, { hint: 'list the ids with: hermes-fs pending list' });
}
