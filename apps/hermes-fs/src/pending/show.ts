/** `hermes-fs pending show` and `pending export`: one spool file, read with the gateway's reader. */
import {
  formatSaveSuccess,
  renderConversation,
  type SaveFormat,
  saveConversation,
  type SnapshotMessage,
} from '@hermes/cli';
import { agentHistoryMessages, readSpoolFile, type SpoolEntryWithContent, type SpoolFile } from '@hermes/gateway';
import { formatOf, type RunContext } from '../commands/common.js';
import type { PendingExportJson, PendingShowJson } from '../json/pending.js';
import { CliError, colorsFor, EXIT, type ExitCode, formatBytes, printJson, println, write } from '../lib/output.js';
import { describeUid } from '../lib/owner-name.js';
import { saveFailed } from '../lib/save-failure.js';
import { shellQuote } from '../lib/shell.js';
import { termSafe } from '../lib/term.js';
import { entryJson, findSpoolFile, shortId } from './common.js';

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

/** Reads the file an entry names; a file that vanished since it was found is an error (exit 2). */
function read(entry: SpoolEntryWithContent): SpoolFile {
  if (entry.problem === 'foreign' || entry.problem === 'not-a-regular-file') return { entry, payload: undefined, raw: undefined };
  const file = readSpoolFile(entry.path);
  if (file === undefined) {
    throw new CliError(`${entry.name} disappeared while it was being read (recovered or pruned meanwhile)`, {
      code: 'ENOENT',
      path: entry.path,
      exitCode: EXIT.error,
      hint: 'list the spool again: hermes-fs pending list',
    });
  }
  return file;
}

export function showAction(ctx: RunContext, ref: string): ExitCode {
  const { entry, payload, raw } = read(findSpoolFile(ctx.home, ref));
  if (ctx.json) {
    printJson({ schemaVersion: 1, command: 'pending show', ok: true, entry: entryJson(entry), payload: payload ?? null, raw: raw ?? null } satisfies PendingShowJson);
    return EXIT.ok;
  }
  const c = colorsFor(process.stdout);
  const field = (name: string, value: string): void => {
    println(`${c.bold(name.padEnd(8))} ${termSafe(value)}`);
  };
  field('file', entry.path);
  const what = entry.problem === null ? entry.kind : entry.problem === 'not-a-regular-file' ? `${entry.problem} (${entry.fileType})` : entry.problem;
  field('kind', entry.payloadKind === null || entry.kind === entry.payloadKind ? what : `${what} (${entry.payloadKind})`);
  const key = entry.content?.sessionKey ?? null;
  const session = entry.content?.sessionId ?? null;
  if (key !== null) field('key', key);
  if (session !== null) field('session', session);
  if (entry.ts !== null) field('time', new Date(entry.ts * 1000).toISOString());
  if (entry.reason !== null) field('reason', entry.reason);
  field('stat', `${formatBytes(entry.size)}, mode ${octal(entry.mode)}, uid ${entry.uid}, modified ${new Date(entry.mtime).toISOString()}`);
  if (entry.target !== null) field('target', entry.target);
  if (entry.members !== null) field('members', String(entry.members));
  if (entry.detail !== null) field('detail', entry.detail);
  if (entry.problem === 'foreign') {
    println(termSafe(`${describeUid(entry.uid)} owns this payload (mode ${octal(entry.mode)}); only that uid (or root) can read and recover it`));
    return EXIT.ok;
  }
  if (entry.problem === 'not-a-regular-file') {
    println(`not a regular file (${entry.fileType}): never followed or opened; recovery leaves it in place — remove it by hand once inspected`);
    return EXIT.ok;
  }
  if (entry.problem === 'unreadable') {
    println(`cannot read it: ${entry.error ?? 'error'}`);
    return EXIT.ok;
  }
  if (entry.kind === 'agent-history') println(c.dim(`salvage it as a transcript: hermes-fs pending export ${shortId(entry)} --format md`));
  println('');
  // JSON.stringify escapes C0 controls already; what it leaves (DEL, C1, bidirectional controls) is escaped JSON-style.
  if (payload !== undefined) println(termSafe(JSON.stringify(payload, null, 2), { json: true, keepNewlines: true }));
  else println(termSafe(raw ?? '', { keepNewlines: true }));
  return EXIT.ok;
}

/**
 * Another uid's file this uid cannot read: the owner is named (uid and account name) with the file's mode, and
 * the fix is to run as that owner — whether it is a snapshot cannot be told from here.
 */
function foreignSpoolFile(entry: SpoolEntryWithContent, home: string): CliError {
  const owner = describeUid(entry.uid);
  const me = typeof process.geteuid === 'function' ? process.geteuid() : -1;
  return new CliError(`${entry.name} belongs to ${owner} (mode ${octal(entry.mode)}): uid ${String(me)} cannot read it, so it cannot be exported from here`, {
    code: 'EFOREIGN_OWNER',
    path: entry.path,
    exitCode: EXIT.error,
    hint: `run as its owner: sudo -u '#${String(entry.uid)}' hermes-fs pending export ${shellQuote(entry.name)} --home ${shellQuote(home)}`,
  });
}

export interface ExportOptions {
  readonly format?: SaveFormat;
  readonly output?: string;
  readonly redact: boolean;
  readonly stdout: boolean;
}

/**
 * The snapshot's messages through @hermes/gateway's reading of the format: an entry the reference wrote as
 * `str(obj)` (an SDK message object) is exported as the text it is, not refused.
 */
function snapshotMessages(payload: unknown, entry: SpoolEntryWithContent): SnapshotMessage[] {
  try {
    return agentHistoryMessages(payload).map(({ origin: _origin, ...m }) => m as SnapshotMessage);
  } catch (err) {
    throw new CliError(`${entry.name}: ${err instanceof Error ? err.message : String(err)}`, { code: 'EINVALID', path: entry.path, exitCode: EXIT.findings, hint: 'inspect it with hermes-fs pending show' });
  }
}

export async function exportAction(ctx: RunContext, ref: string, opts: ExportOptions): Promise<ExitCode> {
  const format = formatOf(opts.output, opts.format, 'md');
  const found = findSpoolFile(ctx.home, ref);
  if (found.problem === 'foreign') throw foreignSpoolFile(found, ctx.home);
  if (found.kind !== 'agent-history' || found.problem !== null) {
    const what = found.problem ?? (found.kind === 'bad' ? 'a .bad file' : `a ${found.kind} payload`);
    throw new CliError(`${found.name} is ${what}, not an agent-history snapshot`, {
      code: 'ENOTSNAPSHOT',
      path: found.path,
      exitCode: EXIT.error,
      hint: 'payloads are replayed by hermes-fs pending recover; read any file with hermes-fs pending show',
    });
  }
  const { entry, payload } = read(found);
  const p = payload as { session_id?: unknown };
  const history = {
    model: null,
    ...(typeof p.session_id === 'string' ? { sessionId: p.session_id } : {}),
    ...(entry.ts === null ? {} : { startedAt: new Date(entry.ts * 1000) }),
    messages: snapshotMessages(payload, entry),
  };
  if (opts.stdout) {
    const text = renderConversation(history, format, { redact: opts.redact });
    if (ctx.json) {
      // --stdout --json: one document, the transcript exact in `transcript`; nothing is written.
      printJson({
        schemaVersion: 1,
        command: 'pending export',
        ok: true,
        id: entry.id,
        source: entry.path,
        format,
        bytes: Buffer.byteLength(text),
        redacted: opts.redact,
        messages: history.messages.length,
        transcript: text,
      } satisfies PendingExportJson);
      return EXIT.ok;
    }
    // On a terminal the transcript is shown, not interpreted; into a pipe or file it stays exact.
    const tty: unknown = process.stdout.isTTY;
    write(tty === true ? termSafe(text, { keepNewlines: true }) : text);
    return EXIT.ok;
  }
  try {
    const r = await saveConversation(history, { home: ctx.home, format, redact: opts.redact, ...(opts.output === undefined ? {} : { filename: opts.output }) });
    if (ctx.json) {
      printJson({
        schemaVersion: 1,
        command: 'pending export',
        ok: true,
        id: entry.id,
        source: entry.path,
        path: r.path,
        format: r.format,
        bytes: r.bytes,
        mode: octal(r.mode),
        redacted: r.redacted,
        messages: history.messages.length,
      } satisfies PendingExportJson);
    } else {
      println(termSafe(formatSaveSuccess(r)));
      println('the snapshot stays in the spool until hermes-fs pending prune removes it (gateway.pending.snapshot_retention_days)');
    }
    return EXIT.ok;
  } catch (err) {
    return saveFailed('pending export', err, { json: ctx.json, debug: ctx.debug });
  }
}
