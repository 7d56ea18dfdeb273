/**
 * `hermes-fs pending recover`: @hermes/gateway's recoverPending into @hermes/session-db's state.db, through the
 * same store a gateway service replays its own spool with (a service's payloads keep their idempotency keys). The
 * app reads nothing itself: the library's own pass is the only reader, the progress comes from its callback.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { silentLogger } from '@hermes/fs-policy';
import {
  acquireGatewayLock,
  describeHolder,
  type GatewayLock,
  GatewayLockError,
  recoverPending,
  type RecoveryReport,
  serviceSessionStore,
  spoolFileId,
  stderrGatewayLogger,
} from '@hermes/gateway';
import { openSessionDb, STATE_DB_FILE } from '@hermes/session-db';
import { PROGRESS_THRESHOLD, type RunContext } from '../commands/common.js';
import { ChunkedWriter, CliError, colorsFor, count, EXIT, type ExitCode, plural, println } from '../lib/output.js';
import { Progress } from '../lib/progress.js';
import { shellQuote } from '../lib/shell.js';
import { termSafe } from '../lib/term.js';
import { shortId, spoolDirOf, unreadableSpool } from './common.js';
import type { PendingRecoverJson } from '../json/pending.js';

export interface RecoverOptions {
  /** Create an empty state.db when there is none (owned by the home's owner; refused where that cannot be). */
  readonly createDb: boolean;
}

/** Lines of each kind printed in text mode before "… and N more" (all of them are in --json). */
const PER_KIND_LIMIT = 20;

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

const euid = (): number => (typeof process.geteuid === 'function' ? process.geteuid() : -1);

/**
 * How many entries the spool holds: 0 when it is missing or empty (nothing to do: no state.db is needed).
 * Names are listed, nothing is opened; with `all` false it stops at the first entry.
 */
function spoolEntries(dir: string, all: boolean): number {
  let handle: fs.Dir;
  try {
    handle = fs.opendirSync(dir);
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return 0;
    throw unreadableSpool(dir, err);
  }
  try {
    let n = 0;
    while (handle.readSync() !== null) {
      n++;
      if (!all) break;
    }
    return n;
  } finally {
    handle.closeSync();
  }
}

/**
 * Whether the session database to recover into is missing. A missing one is refused (exit 2) unless
 * `--create-db`; then {@link openStore} creates it through @hermes/session-db (fs-policy's ensureFile) by this process — which, on a home another uid
 * owns, is never root: root's run switched to the home's owner before it got here (lib/act-as-owner.ts), so
 * the new state.db belongs to the owner and a planted link can lead only where the owner may write.
 */
function storeMissing(home: string, createDb: boolean): boolean {
  const file = path.join(home, STATE_DB_FILE);
  let missing = false;
  try {
    fs.lstatSync(file);
  } catch (err) {
    if (codeOf(err) !== 'ENOENT') {
      throw new CliError(`cannot use the session database ${file} (${codeOf(err)})`, { code: codeOf(err), path: file, exitCode: EXIT.error, cause: err });
    }
    missing = true;
  }
  if (missing && !createDb) {
    throw new CliError(`no session database at ${file}: recovery replays into state.db and does not create an empty one`, {
      code: 'ENODB',
      path: file,
      exitCode: EXIT.error,
      hint: `check --home (the gateway's home has a state.db); to start a new one, run again with --create-db as the home's owner`,
    });
  }
  return missing;
}

/** Opens state.db, creating it when {@link storeMissing} said it is missing (and --create-db allowed it). */
function openStore(home: string, missing: boolean): { db: ReturnType<typeof openSessionDb>; created: boolean } {
  const file = path.join(home, STATE_DB_FILE);
  if (!missing) return { db: openSessionDb({ home }), created: false };
  const homeOwner = fs.statSync(home).uid;
  if (euid() === 0 && homeOwner !== 0) {
    // Unreachable through the CLI (root is re-run as the owner); kept so that no caller creates it as root.
    throw new CliError(`refusing to create ${file} as root: the home ${home} belongs to uid ${homeOwner}`, {
      code: 'EROOT_OWNED',
      path: file,
      exitCode: EXIT.error,
      hint: `run as the home's owner: sudo -u '#${homeOwner}' hermes-fs pending recover --create-db --home ${home}`,
    });
  }
  return { db: openSessionDb({ home }), created: true };
}

/**
 * The home's gateway lock for this run. A live holder (or one that cannot be proven dead from here) refuses
 * the run before anything is opened: exit 2, the holder named, and the fix.
 */
function lockHome(home: string): GatewayLock {
  try {
    return acquireGatewayLock({ home });
  } catch (err) {
    if (!(err instanceof GatewayLockError)) throw err;
    const holder = err.holder === null ? '' : `: ${describeHolder(err.holder)}`;
    const why = err.liveness === null ? '' : ` (${err.liveness.reason})`;
    throw new CliError(
      err.code === 'ELOCKED' ? `refused: another gateway or recovery holds ${err.path}${holder}${why}; nothing was read or changed` : err.message,
      { code: err.code, path: err.path, exitCode: EXIT.error, hint: err.hint, cause: err },
    );
  }
}

function failedOf(report: RecoveryReport): boolean {
  const keptHard = report.kept.some((k) => k.reason === 'store-error' || k.reason === 'read-error' || k.reason === 'resolver-error');
  return report.errors.length > 0 || report.bad.length > 0 || keptHard;
}

/** The report as one JSON document, each array element written on its own line as it is serialised. */
async function writeJson(w: ChunkedWriter, head: Omit<PendingRecoverJson, 'report' | 'ok'>, report: RecoveryReport | null, ok: boolean): Promise<void> {
  const J = JSON.stringify;
  w.write(`{${Object.entries(head).map(([k, v]) => `${J(k)}:${J(v)}`).join(',')},"report":`);
  if (report === null) w.write('null');
  else {
    w.write('{');
    let first = true;
    for (const [key, value] of Object.entries(report)) {
      w.write(`${first ? '' : ','}${J(key)}:`);
      first = false;
      if (!Array.isArray(value)) {
        w.write(J(value));
        continue;
      }
      w.write('[');
      let i = 0;
      for (const item of value as unknown[]) {
        w.write(`${i++ === 0 ? '' : ','}\n${J(item)}`);
        if (w.closed) return;
        if (w.mustWait) await w.drain();
      }
      w.write(']');
    }
    w.write('}');
  }
  w.write(`,"ok":${String(ok)}}\n`);
  await w.end();
}

/** The id `pending list` shows for a snapshot file, which `pending export` takes. */
function snapshotId(file: string): string {
  return shortId({ id: spoolFileId(path.basename(file)) });
}

/** ` --home H`, so the printed command works as it is, whatever the environment of the next shell. */
function exportHome(ctx: RunContext): string {
  return ` --home ${shellQuote(termSafe(ctx.home))}`;
}

function capped<T>(items: readonly T[], line: (item: T) => string): string[] {
  const out = items.slice(0, PER_KIND_LIMIT).map(line);
  if (items.length > PER_KIND_LIMIT) out.push(`  … and ${count(items.length - PER_KIND_LIMIT)} more (all of them with --json)`);
  return out;
}

/** What became of committed files: `removed` when all are gone, else how many were and why the rest were not. */
function removalOf(entries: readonly { readonly path: string; readonly removed: boolean }[], report: RecoveryReport): string {
  const gone = entries.filter((e) => e.removed).length;
  if (gone === entries.length) return 'removed';
  const reasons = new Map(report.kept.map((k) => [k.path, k.reason]));
  const left = entries.filter((e) => !e.removed);
  const refused = left.filter((e) => reasons.get(e.path) !== 'checkpoint-pending').length;
  const parts = [`${count(gone)} removed`];
  if (refused > 0) parts.push(`could not remove ${count(refused)}`);
  if (left.length > refused) parts.push(`${count(left.length - refused)} kept until a checkpoint`);
  return parts.join(', ');
}

/** The errno of each refused removal and where, counted: `EACCES at /home/h/.hermes/pending_messages`. */
function unremovedCodes(report: RecoveryReport): string {
  const unremoved = new Set(report.kept.filter((k) => k.reason === 'not-removed').map((k) => k.path));
  const byCode = new Map<string, { n: number; dirs: Set<string> }>();
  for (const e of report.errors) {
    if (!unremoved.has(e.path)) continue;
    const g = byCode.get(e.code) ?? { n: 0, dirs: new Set<string>() };
    g.n++;
    g.dirs.add(path.dirname(e.path));
    byCode.set(e.code, g);
  }
  return [...byCode].map(([code, g]) => `${byCode.size > 1 ? `${count(g.n)} ` : ''}${code} at ${termSafe(g.dirs.size === 1 ? [...g.dirs][0] ?? '' : report.dir)}`).join(', ');
}

export async function recoverAction(ctx: RunContext, opts: RecoverOptions): Promise<ExitCode> {
  const dir = spoolDirOf(ctx.home);
  const dbFile = path.join(ctx.home, STATE_DB_FILE);
  const stderrTty: unknown = process.stderr.isTTY;
  const progress = new Progress({ enabled: stderrTty === true && !ctx.json, unit: 'files', label: 'recovering' });
  const entries = spoolEntries(dir, progress.enabled);
  if (entries === 0) {
    if (ctx.json) await writeJson(new ChunkedWriter(), { schemaVersion: 1, command: 'pending recover', home: ctx.home, stateDb: dbFile, createdDb: false }, null, true);
    else println(`nothing to recover: ${termSafe(dir)} ${fs.existsSync(dir) ? 'is empty' : 'does not exist'}`);
    return EXIT.ok;
  }
  // A missing state.db is refused before the lock is taken: a refused run changes nothing in the home.
  const missing = storeMissing(ctx.home, opts.createDb);
  // One live writer set per home: refused while a gateway (or another recovery) holds the home's lock.
  const lock = lockHome(ctx.home);
  let store: ReturnType<typeof openStore>;
  try {
    store = openStore(ctx.home, missing);
  } catch (err) {
    lock.release();
    throw err;
  }
  const { db, created } = store;
  // On a terminal, a large spool shows its scan at once (the pass reads every file before the first batch),
  // then a bar with the rate and the time left.
  const showBar = progress.enabled && entries > PROGRESS_THRESHOLD;
  if (showBar) progress.scanning(`${path.basename(dir)}/`, entries);
  let report: RecoveryReport;
  try {
    report = recoverPending({
      home: ctx.home,
      // As the service replays its own spool: its payloads' sessions created, their idempotency keys recorded.
      store: serviceSessionStore(db),
      logger: ctx.debug ? stderrGatewayLogger : silentLogger,
      ...(showBar ? { batchSize: 100 } : {}),
      onProgress: (done, total) => {
        if (showBar && total > PROGRESS_THRESHOLD) progress.update(done, total);
      },
    });
  } finally {
    db.close();
    lock.release();
    progress.stop();
  }
  const failed = failedOf(report);
  if (ctx.json) {
    await writeJson(new ChunkedWriter(), { schemaVersion: 1, command: 'pending recover', home: ctx.home, stateDb: dbFile, createdDb: created }, report, !failed);
    return failed ? EXIT.findings : EXIT.ok;
  }
  const c = colorsFor(process.stdout);
  if (created) println(`created ${termSafe(dbFile)} (--create-db)`);
  // A batch file is one spool file holding many messages: its members are counted as messages of their own.
  const members = report.batches.reduce((n, b) => n + b.members, 0);
  const found = report.batches.length === 0 ? plural(report.scanned, 'spool file') : `${plural(report.scanned - report.batches.length + members, 'message')} (${plural(members, 'message')} in ${plural(report.batches.length, 'batch file')})`;
  println(`recovered ${count(report.inserted.length)} of ${found} into ${termSafe(dbFile)}`);
  if (report.alreadyCommitted.length > 0) println(`  ${plural(report.alreadyCommitted.length, 'file')} committed by an earlier pass (receipt found): ${removalOf(report.alreadyCommitted, report)}, nothing duplicated`);
  const unremoved = report.kept.filter((k) => k.reason === 'not-removed').length;
  if (unremoved > 0) println(`  ${c.red('could not remove')} ${plural(unremoved, 'recovered file')} (${unremovedCodes(report)}): the next recovery removes them without inserting them again`);
  const pendingCheckpoint = report.kept.filter((k) => k.reason === 'checkpoint-pending').length;
  if (pendingCheckpoint > 0) println(`  ${plural(pendingCheckpoint, 'recovered file')} kept until a checkpoint proves them in ${termSafe(dbFile)} (another process held a read snapshot): the next recovery removes them without inserting them again`);
  if (report.snapshots.length > 0) {
    println(`  ${plural(report.snapshots.length, 'agent-history snapshot')} left for you (never replayed automatically); export ${report.snapshots.length === 1 ? 'it' : 'each'} with:`);
    for (const l of capped(report.snapshots, (s) => `    hermes-fs pending export ${shellQuote(termSafe(snapshotId(s.path)))}${exportHome(ctx)}`)) println(l);
  }
  if (report.foreignOwner.length > 0) {
    const uids = [...new Set(report.foreignOwner.map((f) => f.uid))].join(', ');
    println(`  ${plural(report.foreignOwner.length, 'payload')} of uid ${uids} left in place: that uid's own recovery picks them up`);
  }
  for (const l of capped(report.kept, (k) => `  ${c.yellow('kept')} ${termSafe(path.basename(k.path))} (${k.reason}): ${termSafe(k.detail)}`)) println(l);
  for (const l of capped(report.bad, (b) => `  ${c.red('.bad')} ${termSafe(path.basename(b.badPath))}: ${termSafe(b.error)}`)) println(l);
  for (const l of capped(report.errors, (e) => `  ${c.red('error')} ${termSafe(e.path)}: ${e.code} ${termSafe(e.message)}. Fix: ${termSafe(e.hint)}`)) println(l);
  return failed ? EXIT.findings : EXIT.ok;
}
