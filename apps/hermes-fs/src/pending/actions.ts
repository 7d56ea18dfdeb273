/**
 * The `hermes-fs pending` actions (loaded on demand, so `--help` does not pay for the packages).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadConfig } from '@hermes/config';
import {
  formatSaveFailure,
  formatSaveSuccess,
  renderConversation,
  type SaveFormat,
  saveConversation,
  type SnapshotMessage,
} from '@hermes/cli';
import { silentLogger } from '@hermes/fs-policy';
import { prune, type PruneReport, recoverPending, stderrGatewayLogger } from '@hermes/gateway';
import { openSessionDb } from '@hermes/session-db';
import { SingleBar } from 'cli-progress';
import Table from 'cli-table3';
import { type CommonOptions, PROGRESS_THRESHOLD, setExit } from '../commands/common.js';
import { resolveHome } from '../lib/home.js';
import { CliError, colorsFor, COMPACT_CHARS, EXIT, formatAge, formatBytes, PLAIN_TABLE_STYLE, plural, printJson, println } from '../lib/output.js';
import { findEntry, listSpool, readPayload, type SpoolEntry } from './spool.js';


function ageOf(e: SpoolEntry, now: number): string {
  return e.ts === null ? '?' : formatAge(now - e.ts * 1000);
}

function sessionOf(e: SpoolEntry): string {
  return e.sessionId ?? e.sessionKey ?? '';
}

export interface ExportOptions extends CommonOptions {
  format?: SaveFormat;
  output?: string;
  redact: boolean;
  stdout: boolean;
}

function snapshotMessages(payload: unknown, entry: SpoolEntry): SnapshotMessage[] {
  const messages = (payload as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) throw new CliError(`${entry.name} has no messages array`);
  return messages.map((m: unknown, i) => {
    if (m === null || typeof m !== 'object' || typeof (m as { role?: unknown }).role !== 'string') {
      throw new CliError(`${entry.name}: message ${i} has no role`, { hint: 'inspect it with hermes-fs pending show' });
    }
    return m as SnapshotMessage;
  });
}

export interface PruneOptions extends CommonOptions {
  olderThan?: number;
  dryRun: boolean;
}

export function listAction(opts: CommonOptions): void {
  const home = resolveHome(opts.home);
  const listing = listSpool(home);
  const now = Date.now();
  if (opts.json) {
    printJson({ schemaVersion: 1, command: 'pending list', home, ...listing });
    return;
  }
  const c = colorsFor(process.stdout);
  if (!listing.exists) {
    println(`no spool: ${listing.dir} does not exist`);
    return;
  }
  if (listing.entries.length === 0) {
    println(`spool ${listing.dir} is empty`);
    return;
  }
  const table = new Table({
    head: ['id', 'status', 'kind', 'session', 'age', 'size', 'uid', 'text'].map((h) => c.bold(h)),
    style: PLAIN_TABLE_STYLE,
    chars: COMPACT_CHARS,
  });
  for (const e of listing.entries) {
    const status = e.status === 'bad' || e.status === 'unparseable' ? c.red(e.status) : e.status === 'snapshot' ? c.yellow(e.status) : e.status;
    table.push([
      e.id.length === 32 ? e.id.slice(0, 12) : e.id,
      status,
      e.kind ?? '-',
      sessionOf(e),
      ageOf(e, now),
      formatBytes(e.bytes),
      String(e.uid),
      e.status === 'snapshot' ? `${String(e.messages ?? 0)} messages` : (e.preview ?? ''),
    ]);
  }
  println(table.toString());
  const count = (s: SpoolEntry['status']) => listing.entries.filter((e) => e.status === s).length;
  println(
    `${plural(listing.entries.length, 'file')} in ${listing.dir}: ${plural(count('payload'), 'payload')}, ` +
      `${plural(count('snapshot'), 'agent-history snapshot')}, ${count('bad')} .bad, ${count('foreign')} of other uids, ${count('unparseable')} unparseable` +
      (listing.tempFiles > 0 ? ` (+${listing.tempFiles} temp files: see hermes-fs doctor)` : ''),
  );
}

export function showAction(id: string, opts: CommonOptions): void {
  const home = resolveHome(opts.home);
  const entry = findEntry(listSpool(home), id);
  let payload: unknown = null;
  if (entry.status !== 'foreign') {
    try {
      payload = readPayload(entry.path);
    } catch {
      payload = fs.readFileSync(entry.path, 'utf8');
    }
  }
  if (opts.json) {
    printJson({ schemaVersion: 1, command: 'pending show', entry, payload });
    return;
  }
  const c = colorsFor(process.stdout);
  println(`${c.bold('file')}     ${entry.path}`);
  println(`${c.bold('status')}   ${entry.status}${entry.kind === null ? '' : ` (${entry.kind})`}`);
  if (entry.sessionKey !== null) println(`${c.bold('key')}      ${entry.sessionKey}`);
  if (entry.sessionId !== null) println(`${c.bold('session')}  ${entry.sessionId}`);
  if (entry.ts !== null) println(`${c.bold('time')}     ${new Date(entry.ts * 1000).toISOString()}`);
  if (entry.reason !== null) println(`${c.bold('reason')}   ${entry.reason}`);
  println(`${c.bold('stat')}     ${formatBytes(entry.bytes)}, mode ${entry.mode}, uid ${entry.uid}`);
  if (entry.status === 'foreign') {
    println(`uid ${entry.uid} owns this payload (0600); only that uid (or root) can read and recover it`);
    return;
  }
  if (entry.status === 'snapshot') println(c.dim(`salvage it as a transcript: hermes-fs pending export ${entry.id.slice(0, 12)} --format md`));
  println('');
  println(typeof payload === 'string' ? payload : JSON.stringify(payload, null, 2));
}

export async function exportAction(id: string, opts: ExportOptions): Promise<void> {
  const home = resolveHome(opts.home);
  const entry = findEntry(listSpool(home), id);
  if (entry.status !== 'snapshot') {
    throw new CliError(`${entry.name} is ${entry.status === 'payload' ? `a ${entry.kind ?? 'pending'} payload` : entry.status}, not an agent-history snapshot`, {
      hint: 'payloads are replayed by hermes-fs pending recover; read any file with hermes-fs pending show',
    });
  }
  const payload = readPayload(entry.path) as { session_id?: unknown; ts?: unknown };
  const history = {
    model: null,
    ...(typeof payload.session_id === 'string' ? { sessionId: payload.session_id } : {}),
    ...(entry.ts === null ? {} : { startedAt: new Date(entry.ts * 1000) }),
    messages: snapshotMessages(payload, entry),
  };
  const format = opts.format ?? 'md';
  if (opts.stdout) {
    process.stdout.write(renderConversation(history, format, { redact: opts.redact }));
    return;
  }
  try {
    const r = await saveConversation(history, {
      home,
      format,
      redact: opts.redact,
      ...(opts.output === undefined ? {} : { filename: opts.output }),
    });
    if (opts.json) {
      printJson({ schemaVersion: 1, command: 'pending export', ok: true, id: entry.id, source: entry.path, path: r.path, format: r.format, bytes: r.bytes, mode: r.mode.toString(8).padStart(4, '0'), redacted: r.redacted, messages: history.messages.length });
    } else {
      println(formatSaveSuccess(r));
      println(`the snapshot stays in the spool until hermes-fs pending prune removes it (gateway.pending.snapshot_retention_days)`);
    }
  } catch (err) {
    const line = formatSaveFailure(err);
    if (opts.json) printJson({ schemaVersion: 1, command: 'pending export', ok: false, id: entry.id, error: line });
    process.stderr.write(`${line}\n`);
    setExit(EXIT.findings);
  }
}

export function recoverAction(opts: CommonOptions): void {
  const home = resolveHome(opts.home);
  const listing = listSpool(home);
  if (!listing.exists) {
    if (opts.json) printJson({ schemaVersion: 1, command: 'pending recover', home, ok: true, report: null });
    else println(`no spool: ${listing.dir} does not exist; nothing to recover`);
    return;
  }
  const total = listing.entries.filter((e) => e.status !== 'bad').length;
  const showBar = total > PROGRESS_THRESHOLD && process.stderr.isTTY && !opts.json;
  const bar = showBar
    ? new SingleBar({ stream: process.stderr, format: 'recovering [{bar}] {value}/{total} files', hideCursor: true, clearOnComplete: false }, undefined)
    : null;
  bar?.start(total, 0);
  const db = openSessionDb({ home });
  let report;
  try {
    report = recoverPending({
      home,
      store: db,
      logger: opts.debug ? stderrGatewayLogger : silentLogger,
      ...(showBar ? { batchSize: 100 } : {}),
      onProgress: (done, all) => {
        bar?.setTotal(all);
        bar?.update(done);
      },
    });
  } finally {
    db.close();
    bar?.update(total);
    bar?.stop();
  }
  const keptHard = report.kept.filter((k) => k.reason === 'store-error' || k.reason === 'read-error' || k.reason === 'resolver-error');
  const failed = report.errors.length > 0 || report.bad.length > 0 || keptHard.length > 0;
  if (opts.json) {
    printJson({ schemaVersion: 1, command: 'pending recover', home, ok: !failed, report });
  } else {
    const c = colorsFor(process.stdout);
    println(`recovered ${report.inserted.length} of ${report.scanned} spool files into ${path.join(home, 'state.db')}`);
    if (report.alreadyCommitted.length > 0) println(`  ${plural(report.alreadyCommitted.length, 'file')} committed by an earlier pass (receipt found): removed, nothing duplicated`);
    if (report.snapshots.length > 0) println(`  ${plural(report.snapshots.length, 'agent-history snapshot')} left for you: hermes-fs pending export ID`);
    if (report.foreignOwner.length > 0) {
      const uids = [...new Set(report.foreignOwner.map((f) => f.uid))].join(', ');
      println(`  ${plural(report.foreignOwner.length, 'payload')} of uid ${uids} left in place: that uid's own recovery picks them up`);
    }
    for (const k of report.kept) println(`  ${c.yellow('kept')} ${path.basename(k.path)} (${k.reason}): ${k.detail}`);
    for (const b of report.bad) println(`  ${c.red('.bad')} ${path.basename(b.badPath)}: ${b.error}`);
    for (const e of report.errors) println(`  ${c.red('error')} ${e.path}: ${e.code} ${e.message}. Fix: ${e.hint}`);
  }
  setExit(failed ? EXIT.findings : EXIT.ok);
}

export async function pruneAction(opts: PruneOptions): Promise<void> {
  const home = resolveHome(opts.home);
  const reports: PruneReport[] = [];
  if (opts.olderThan !== undefined) {
    reports.push(prune({ home, olderThanDays: opts.olderThan, dryRun: opts.dryRun, include: ['bad', 'snapshots', 'temp'], logger: silentLogger }));
  } else {
    const { config } = await loadConfig(home);
    const p = config.gateway.pending;
    reports.push(prune({ home, olderThanDays: p.badRetentionDays, dryRun: opts.dryRun, include: ['bad', 'temp'], logger: silentLogger }));
    reports.push(prune({ home, olderThanDays: p.snapshotRetentionDays, dryRun: opts.dryRun, include: ['snapshots'], logger: silentLogger }));
  }
  const matched = reports.flatMap((r) => r.matched);
  const removed = reports.flatMap((r) => r.removed);
  const errors = reports.flatMap((r) => r.errors);
  if (opts.json) {
    printJson({ schemaVersion: 1, command: 'pending prune', home, dryRun: opts.dryRun, matched, removed, errors });
  } else {
    const verb = opts.dryRun ? 'would delete' : 'deleted';
    for (const m of matched) {
      const done = opts.dryRun || removed.includes(m.path);
      println(`  ${done ? verb : 'could not delete'} ${m.category.padEnd(9)} ${path.basename(m.path)}  (${m.ageDays.toFixed(1)} days, ${formatBytes(m.bytes)})`);
    }
    for (const e of errors) println(`  error ${e.path}: ${e.code}`);
    println(`${opts.dryRun ? 'dry run: ' : ''}${verb} ${plural(opts.dryRun ? matched.length : removed.length, 'spool file')}`);
  }
  setExit(errors.length > 0 ? EXIT.findings : EXIT.ok);
}
