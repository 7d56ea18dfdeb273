import { hintFor } from '@hermes/fs-policy';
import { describeValue } from './errors.js';
import { loggerFor } from './log.js';
import { emptyReport, Pass } from './recover-pass.js';
import type { RecoverOptions, RecoveryReport } from './recover-types.js';
import { codeOf, egid, euid, messageOf } from './recover-util.js';
import { type SpoolLocation, spoolLocation } from './spool.js';
import type { SessionStore } from './store.js';

export type { InsertedEntry, KeptReason, RecoverOptions, RecoveryBatchFile, RecoveryCounts, RecoveryHooks, RecoveryReport } from './recover-types.js';
export { DEFAULT_RECOVERY_BATCH_SIZE } from './recover-pass.js';

/**
 * Replays the shutdown spool of a home into a session store, exactly once:
 * 1. a first pass reads every `*.json` in `pending_messages/` (`O_NOFOLLOW`; UTF-8, BOM tolerated; Python's
 *    NaN/Infinity accepted) and keeps only its name and ordering key — and its text while all texts fit 8 MiB;
 * 2. files are replayed in `(ts, seq, name)` order, batch by batch, each parsed again (and read again unless
 *    its text was kept) when its batch comes, so memory does not grow with the payloads of the whole spool;
 * 3. each file is decided on its own (a corrupt file never aborts the pass): inserted, kept (with a reason),
 *    left as an agent-history snapshot, or — when the store rejects its row — renamed `.bad`;
 * 4. a file's rows and its receipt — the payload's identity (its writer's process id, pid and seq, or a hash
 *    of its bytes; see identity.ts) — are committed in one transaction, and only then (after the batch's
 *    commit) is the file removed; a file whose receipt already exists is just removed, so two names of one
 *    payload are delivered once (the second is reported in `duplicates`).
 * Files another uid owns (unreadable 0600 payloads) are left in place and reported as that uid's.
 * Never throws for file or store problems: everything lands in the report.
 */
export function recoverPending(options: RecoverOptions): RecoveryReport {
  const refused = (p: string, code: string, message: string, hint: string): RecoveryReport => {
    const report = emptyReport(p);
    report.errors.push({ path: p, code, message, hint });
    try {
      loggerFor((options as Partial<RecoverOptions> | null)?.logger).error(`pending-message recovery: ${code} at ${p}: ${message} — fix: ${hint}`, { path: p, code });
      options.onProgress?.(0, 0);
    } catch {
      // a logger's or progress bar's failure changes nothing
    }
    return report;
  };
  const store: unknown = (options as Partial<RecoverOptions> | null)?.store;
  const usable = (s: unknown): s is SessionStore =>
    s !== null &&
    typeof s === 'object' &&
    typeof (s as Partial<SessionStore>).commitRecovered === 'function' &&
    typeof (s as Partial<SessionStore>).hasReceipt === 'function';
  if (!usable(store)) {
    return refused(
      options.home ?? '',
      'EINVALID_OPTION',
      `recoverPending needs a store with hasReceipt() and commitRecovered(), got ${describeValue(store)}; nothing was read or changed`,
      'pass `store: openSessionDb({ home })` (or another SessionStore).',
    );
  }
  let loc: SpoolLocation;
  try {
    loc = spoolLocation(options);
  } catch (err) {
    const p = options.home ?? '';
    const code = codeOf(err, 'EUNKNOWN');
    return refused(p, code, messageOf(err), hintFor(code, p, euid(), egid()));
  }
  return new Pass(options, loc).run();
}

