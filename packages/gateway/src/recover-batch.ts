/**
 * Recovery of batch files (batch.ts): each member of a batch is recovered exactly as the file `name` holding
 * `text` would be — same ordering key, same receipt (its payload identity) — so a member that also reached the
 * spool as a file of its own is inserted once, whichever of the two a pass meets first.
 *
 * A member's report path is `<batch path>/<member name>`: it names the batch it came from and can never be a
 * spool entry (entries are direct children of the spool). It is never unlinked or renamed.
 *
 * A batch file is removed only when every member is settled: its rows are committed and checkpointed (or an
 * earlier pass committed them), or the member could not be inserted now (an unresolvable session, an
 * agent-history snapshot, a payload recovery keeps or the store rejects) and was written out as a spool file of
 * its own — atomic, relative to the held spool, fsynced, never over an existing name (the same bytes already
 * there are that file) — which the next pass handles like any file. The written files' names are made durable
 * (the held spool fsynced) before the batch is unlinked. A member that is neither (the store failed, its commit
 * is not checkpointed yet, it could not be written out) keeps the whole batch for the next pass.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { atomicWriteSync, FsPolicyError, fsyncHeldDirectorySync, type HermesEnvironment, readRegularFileSync } from '@hermes/fs-policy';
import { isBatchName, looksLikeBatch, parseBatch } from './batch.js';
import { heldSpool, sys } from './held.js';
import { parseJsonTolerant } from './json.js';
import type { RecoveryOrder } from './ordering.js';
import { orderingKey } from './payload.js';
import type { KeptReason, RecoveryBatchFile, RecoveryReport } from './recover-types.js';
import { codeOf, messageOf } from './recover-util.js';
import { SPOOL_KIND } from './spool.js';

/**
 * Kept reasons that depend on the member's content or on the sessions the store knows, not on this pass's
 * store: such a member is written out as a file of its own, so the batch does not wait for it forever. Any
 * other reason (the store failed, a commit not checkpointed yet, …) keeps the batch.
 */
const WRITE_OUT: ReadonlySet<KeptReason> = new Set<KeptReason>([
  'unparseable',
  'too-deep',
  'not-an-object',
  'unknown-schema-version',
  'unknown-kind',
  'no-text',
  'invalid-cap-drop',
  'unresolved',
  'resolver-error',
  'unknown-session',
  'read-error',
]);

/** {@link BatchFiles} `#writeOut`: the name holds other bytes. */
const CONFLICT = Symbol('conflict');

/** The report path of member `name` of the batch at `batchPath`. */
export function memberPath(batchPath: string, name: string): string {
  return `${batchPath}${path.sep}${name}`;
}

/**
 * Whether `p` is a batch member's report path (`<spool>/<batch>.json/<member>`): its parent is a `*.json`
 * name, which no real spool entry's parent is.
 */
export function isMemberPath(p: string): boolean {
  return path.basename(path.dirname(p)).endsWith('.json');
}

/** What recovery reports through (the pass's own sinks). */
export interface BatchSink {
  keep(p: string, reason: KeptReason, detail: string): void;
  error(p: string, code: string, message: string, hint?: string): void;
}

interface Tracked {
  readonly entry: RecoveryBatchFile;
  /** Members settled for good: durable in the store, or written out as files of their own. */
  settled: number;
  /** Why the batch must stay (the first reason), or undefined. */
  hold: string | undefined;
}

export class BatchFiles {
  readonly #dir: string;
  readonly #env: HermesEnvironment;
  readonly #report: RecoveryReport;
  readonly #sink: BatchSink;
  readonly #byPath = new Map<string, Tracked>();
  readonly #list: Tracked[] = [];
  /** Texts of the members being decided or committed (bounded by a commit batch), by member path. */
  readonly #staged = new Map<string, string>();
  #wroteOut = false;
  /** The last {@link #writeOut} found the same bytes already under the name. */
  #existed = false;

  constructor(dir: string, env: HermesEnvironment, report: RecoveryReport, sink: BatchSink) {
    this.#dir = dir;
    this.#env = env;
    this.#report = report;
    this.#sink = sink;
  }

  /**
   * First pass: when the parsed spool file `name` is a batch (by its name or its `kind`), records its members in
   * `order` (under their own names, with their ordering keys and texts) and returns true; a batch that fails
   * validation is kept (`invalid-batch`), none of it used. False: `name` is no batch.
   */
  scan(name: string, payload: unknown, order: RecoveryOrder): { members: number } | undefined {
    if (!isBatchName(name) && !looksLikeBatch(payload)) return undefined;
    const p = `${this.#dir}${path.sep}${name}`;
    const parsed = parseBatch(payload);
    if (parsed.batch === undefined) {
      this.#sink.keep(p, 'invalid-batch', `${name} is not a valid batch file (${parsed.problem}); none of its members was used`);
      return { members: 0 };
    }
    const index = this.#list.length;
    const entry: RecoveryBatchFile = { path: p, members: parsed.batch.payloads.length, inserted: 0, alreadyCommitted: 0, writtenOut: 0, removed: false, detail: null };
    const t: Tracked = { entry, settled: 0, hold: undefined };
    this.#list.push(t);
    this.#byPath.set(p, t);
    this.#report.batches.push(entry);
    for (const m of parsed.batch.payloads) {
      let key = { ts: 0, seq: -1 };
      try {
        key = orderingKey(parseJsonTolerant(m.text));
      } catch {
        // decided (kept unparseable, written out) when its turn comes
      }
      order.add(m.name, key.ts, key.seq, m.text, index);
    }
    return { members: entry.members };
  }

  /** The report path of entry `i` of `order` when it is a batch member (else undefined). */
  pathOf(order: RecoveryOrder, i: number): string | undefined {
    const b = order.batch(i);
    const t = b >= 0 ? this.#list[b] : undefined;
    return t === undefined ? undefined : memberPath(t.entry.path, order.name(i));
  }

  /** A member is being decided: its text, until it is settled or its commit batch is. */
  stage(p: string, text: string): void {
    this.#staged.set(p, text);
  }

  unstage(p: string): void {
    this.#staged.delete(p);
  }

  /** After a commit batch: every member it held is settled in the report (or kept through {@link keep}). */
  committed(): void {
    this.#staged.clear();
  }

  /**
   * A member recovery keeps: written out as a file of its own when the reason is its content's (then reported
   * kept under that file's path), else the batch stays for the next pass. Returns false for a path that is no
   * member's.
   */
  keep(p: string, reason: KeptReason, detail: string): boolean {
    const t = this.#trackedOf(p);
    if (t === undefined) return false;
    const text = this.#staged.get(p);
    this.#staged.delete(p);
    if (!WRITE_OUT.has(reason) || text === undefined) {
      t.hold ??= `a member was kept (${reason}): ${detail}`;
      this.#report.kept.push({ path: p, reason, detail });
      return true;
    }
    const name = path.basename(p);
    const written = this.#writeOut(t, p, name, text);
    if (written === undefined) {
      this.#report.kept.push({ path: p, reason, detail: `${detail}; it could not be written out of its batch, which is kept` });
      return true;
    }
    // The same bytes were there already: that file is in this pass's listing and reported on its own.
    if (!this.#existed) this.#report.kept.push({ path: written, reason, detail: `${detail} (written out of ${path.basename(t.entry.path)} as a file of its own)` });
    return true;
  }

  /** An agent-history snapshot member: written out as a file of its own and reported as a snapshot there. */
  snapshot(p: string, sessionId: string | null, count: number | null): boolean {
    const t = this.#trackedOf(p);
    if (t === undefined) return false;
    const text = this.#staged.get(p);
    this.#staged.delete(p);
    const written = text === undefined ? undefined : this.#writeOut(t, p, path.basename(p), text);
    if (written === undefined) t.hold ??= 'an agent-history snapshot member could not be written out';
    if (written === undefined || !this.#existed) this.#report.snapshots.push({ path: written ?? p, sessionId, count });
    return true;
  }

  /** A member whose rows the store rejected: written out as `<name>.bad` (what a file of its own would become). */
  rejected(p: string, reason: string): void {
    const t = this.#trackedOf(p);
    const text = this.#staged.get(p);
    this.#staged.delete(p);
    if (t === undefined || text === undefined) {
      if (t !== undefined) t.hold ??= 'a member the store rejected could not be written out';
      this.#sink.error(p, 'EUNEXPECTED', `rejected by the store (${reason}), and its text is no longer at hand to write it out; its batch is kept`);
      return;
    }
    const name = path.basename(p);
    let written = this.#writeOut(t, p, `${name}.bad`, text, false);
    if (written === CONFLICT) written = this.#writeOut(t, p, `${name}.${Date.now().toString(36)}.bad`, text);
    if (typeof written === 'string') this.#report.bad.push({ path: p, badPath: written, error: reason });
  }

  #trackedOf(p: string): Tracked | undefined {
    return isMemberPath(p) ? this.#byPath.get(path.dirname(p)) : undefined;
  }

  /**
   * Writes a member's text to `target` in the held spool (never over an existing name); returns the path, or
   * undefined after recording why not (the batch is then kept). The same bytes already there count as written.
   * `last`: other bytes under `target` are an error; else {@link CONFLICT} is returned (the caller tries another name).
   */
  #writeOut(t: Tracked, p: string, target: string, text: string, last?: true): string | undefined;
  #writeOut(t: Tracked, p: string, target: string, text: string, last: false): string | typeof CONFLICT | undefined;
  #writeOut(t: Tracked, p: string, target: string, text: string, last = true): string | typeof CONFLICT | undefined {
    const final = `${this.#dir}${path.sep}${target}`;
    this.#existed = false;
    const problem = this.#place(target, final, Buffer.from(text, 'utf8'));
    if (problem === CONFLICT && !last) return CONFLICT;
    if (problem !== undefined) {
      const { code, message } =
        problem === CONFLICT ? { code: 'EEXIST', message: `${final} exists with other content than the batch member of that name; both are kept` } : problem;
      t.hold ??= `${path.basename(p)} could not be written out (${code})`;
      this.#sink.error(p, code, `cannot write the batch member ${path.basename(p)} out as ${final}: ${message}`);
      return undefined;
    }
    t.settled++;
    t.entry.writtenOut++;
    this.#wroteOut = true;
    return final;
  }

  /** Creates `target` holding `bytes` in the held spool, or says why not ({@link CONFLICT}: other bytes are there). */
  #place(target: string, final: string, bytes: Buffer): { code: string; message: string } | typeof CONFLICT | undefined {
    const held = heldSpool(this.#dir);
    if (held === undefined) return { code: 'EUNEXPECTED', message: 'the spool is not held' };
    try {
      atomicWriteSync(held.at(target), bytes, { kind: SPOOL_KIND, env: this.#env, durable: 'file', createParents: false, overwrite: false, root: held.self });
      return undefined;
    } catch (err) {
      const cause = err instanceof FsPolicyError ? (err.cause ?? err) : err;
      if (codeOf(err, '') !== 'EEXIST') return { code: codeOf(cause, 'EUNKNOWN'), message: messageOf(cause) };
    }
    try {
      // The same bytes already there are that file (an earlier pass wrote it out, or it reached disk on its own).
      if (!readRegularFileSync(sys(final), { maxBytes: bytes.length }).data.equals(bytes)) return CONFLICT;
      this.#existed = true;
      return undefined;
    } catch (err) {
      if (codeOf(err, '') === 'ETOO_LARGE') return CONFLICT;
      return { code: codeOf(err, 'EUNKNOWN'), message: `it exists and cannot be compared: ${messageOf(err)}` };
    }
  }

  /**
   * End of the pass, after the last checkpoint: removes every batch whose members are all settled (durable in
   * the store, or written out), once the written files' names are durable; sets each member's `removed` to
   * whether its batch was removed. Nothing is removed after a store failure.
   */
  finish(storeFailed: boolean): void {
    if (this.#list.length === 0) return;
    const r = this.#report;
    const members = (list: readonly { path: string; removed: boolean }[], count: (t: Tracked) => void): void => {
      for (const e of list) {
        const t = this.#trackedOf(e.path);
        if (t === undefined) continue;
        count(t);
        if (e.removed) t.settled++; // committed and checkpointed (a member has no file to unlink)
        else t.hold ??= 'a committed member is not checkpointed yet';
      }
    };
    members(r.inserted, (t) => t.entry.inserted++);
    members(r.alreadyCommitted, (t) => t.entry.alreadyCommitted++);
    members(r.duplicates, (t) => t.entry.alreadyCommitted++);
    let durable = true;
    const held = heldSpool(this.#dir);
    if (this.#wroteOut && held !== undefined) {
      try {
        fsyncHeldDirectorySync(held);
      } catch (err) {
        durable = false;
        this.#sink.error(this.#dir, codeOf(err, 'EUNKNOWN'), `fsync of ${this.#dir} after writing batch members out failed: ${messageOf(err)}; the batches are kept`);
      }
    }
    for (const t of this.#list) {
      const e = t.entry;
      if (storeFailed) t.hold ??= 'the session store failed in this pass';
      if (!durable) t.hold ??= 'the members written out are not durable yet';
      if (t.hold === undefined && t.settled < e.members) t.hold = `${String(e.members - t.settled)} member(s) were not settled in this pass`;
      if (t.hold !== undefined) {
        e.detail = `kept: ${t.hold}; the next pass finishes it`;
        continue;
      }
      try {
        fs.unlinkSync(sys(e.path));
        e.removed = true;
      } catch (err) {
        if (codeOf(err, '') === 'ENOENT') e.removed = true;
        else {
          const message = `every member is settled, but the batch file could not be removed: ${messageOf(err)}`;
          e.detail = message;
          this.#sink.keep(e.path, 'not-removed', message);
          this.#sink.error(e.path, codeOf(err, 'EUNKNOWN'), message);
        }
      }
    }
    const removed = (list: readonly { path: string; removed: boolean }[]): void => {
      for (const x of list) {
        const t = this.#trackedOf(x.path);
        if (t !== undefined) x.removed = t.entry.removed;
      }
    };
    removed(r.inserted);
    removed(r.alreadyCommitted);
    removed(r.duplicates);
  }
}
