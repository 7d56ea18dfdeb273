/**
 * Salvage of temp files a killed writer left in `pending_messages/`. An atomic write creates its payload
 * under a temp name, fsyncs it and renames it into place; a `SIGKILL` (a stop timeout) between the fsync and
 * the rename leaves a complete, durable payload under the temp name, which no `*.json` listing sees. Such a
 * payload is adopted by content: the bytes read and verified through a descriptor are written to a new file
 * under the name it was written for (created exclusively, never over an existing file), once. A temp that
 * is not a complete payload is moved aside as `.partial` and reported — never deleted.
 *
 * Temp names are recognised only through @hermes/fs-policy's `parseTempName()` (its format is fs-policy's
 * to change) and the Python reference's `mkstemp` names (`.<stem>_<8 random>.tmp`, for `<stem>.json`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { atomicWriteSync, FsPolicyError, fsyncHeldDirectorySync, hintFor, readRegularFileSync, sweepTempFilesSync } from '@hermes/fs-policy';
import { explain, forEachSpoolEntry, heldSpool, holdSpool, sys } from './held.js';
import { count, type GatewayLogger, loggerFor } from './log.js';
import { READ_FLAGS } from './read.js';
import { incompleteBecause, isPayloadName, maxTempBytes, tempTarget } from './salvage-temp.js';
import type { Candidate, SalvageLeftReason, SalvageOptions, SalvageReport } from './salvage-types.js';
import { SPOOL_KIND, type SpoolLocation, spoolLocation } from './spool.js';

export { tempTarget } from './salvage-temp.js';
export type { SalvageLeftReason, SalvageOptions, SalvageReport } from './salvage-types.js';

/** A temp whose writer cannot be checked (no pid, another pid namespace) is left alone until it is this old (one minute). */
export const DEFAULT_SALVAGE_MIN_AGE_MS = 60_000;

function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

function egid(): number {
  return typeof process.getegid === 'function' ? process.getegid() : -1;
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? explain(err).message : String(err);
}

/** The bytes of a regular file, never through a link; undefined when it does not exist. */
function readRegular(p: string): Buffer | undefined {
  try {
    return readRegularFileSync(sys(p), { maxBytes: maxTempBytes(path.basename(p)) }).data;
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

class Salvage {
  readonly report: SalvageReport;
  readonly #loc: SpoolLocation;
  readonly #logger: GatewayLogger;
  readonly #minAgeMs: number;
  readonly #now: number;
  #changed = false;

  constructor(loc: SpoolLocation, options: SalvageOptions) {
    this.#loc = loc;
    this.#logger = loggerFor(options.logger);
    this.#minAgeMs = options.minAgeMs ?? DEFAULT_SALVAGE_MIN_AGE_MS;
    this.#now = options.now ?? Date.now();
    this.report = { dir: loc.dir, scanned: 0, adopted: [], duplicates: [], partial: [], left: [], errors: [], durable: true };
  }

  #error(p: string, err: unknown, what: string): void {
    const code = codeOf(err);
    this.report.errors.push({ path: p, code, message: `${what}: ${messageOf(err)}`, hint: hintFor(code, p, euid(), egid()) });
  }

  #left(temp: string, reason: SalvageLeftReason, detail: string): void {
    this.report.left.push({ temp, reason, detail });
  }

  run(): SalvageReport {
    // Every call on a spool entry goes through the held directory (sys()): a group member who swaps
    // pending_messages/ for a link cannot make the salvage rename or remove files elsewhere.
    let release: (() => void) | undefined;
    try {
      release = holdSpool(this.#loc.dir, this.#loc.env);
    } catch (err) {
      this.#error(this.#loc.dir, err, `cannot use ${this.#loc.dir}`);
      return this.report;
    }
    // No spool directory: nothing to salvage, and nothing is done by path (a link may take its place).
    if (release === undefined) return this.report;
    try {
      return this.#runHeld();
    } finally {
      release();
    }
  }

  #runHeld(): SalvageReport {
    const dir = this.#loc.dir;
    const candidates: Candidate[] = [];
    const broken = forEachSpoolEntry(dir, (entry) => {
      if (!entry.name.startsWith('.')) return;
      const parsed = tempTarget(entry.name);
      if (parsed === undefined) return;
      this.report.scanned++;
      if (!entry.isFile()) {
        this.#left(path.join(dir, entry.name), 'not-a-regular-file', `${entry.name} is not a regular file`);
        return;
      }
      candidates.push({ name: entry.name, target: parsed.target, pid: parsed.pid, alive: null });
    });
    if (broken !== undefined) {
      if (broken.opening && codeOf(broken.err) === 'ENOENT') return this.report;
      this.#error(dir, broken.err, `cannot list ${dir}`);
      if (broken.opening) return this.report;
    }
    // Only a spool with temp files is listed a second time, for fs-policy's own view of them: which writer is
    // alive, read in the writer's pid namespace (a temp gone from that listing stays "cannot be checked").
    if (candidates.some((c) => c.pid !== undefined)) {
      const alive = new Map<string, boolean | null>();
      try {
        for (const t of sweepTempFilesSync(sys(dir), { recursive: false, now: this.#now }).found) {
          alive.set(path.basename(t.path), t.pidAlive);
        }
      } catch (err) {
        if (codeOf(err) !== 'ENOENT') this.#error(dir, err, `cannot list the temp files of ${dir}`);
        return this.report;
      }
      for (const c of candidates) if (c.pid !== undefined) c.alive = alive.get(c.name) ?? null;
    }
    candidates.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const c of candidates) this.#one(c);
    const held = heldSpool(dir);
    if (this.#changed && held !== undefined) {
      try {
        fsyncHeldDirectorySync(held);
      } catch (err) {
        this.report.durable = false;
        this.#error(dir, err, `fsync of ${dir} after salvaging temp files failed`);
      }
    }
    this.#log();
    return this.report;
  }

  #one(c: Candidate): void {
    const temp = path.join(this.#loc.dir, c.name);
    if (!isPayloadName(c.target)) {
      this.#left(temp, 'not-a-payload', `${c.name} belongs to ${c.target}, which is no payload name`);
      return;
    }
    let file: { data: Buffer; stat: fs.Stats };
    try {
      // Never through a link, never blocking on a FIFO; what is judged is what the checked descriptor held.
      file = readRegularFileSync(sys(temp), { maxBytes: maxTempBytes(c.target) });
    } catch (err) {
      const code = codeOf(err);
      if (code === 'ENOENT') return; // renamed or salvaged meanwhile
      if (code === 'ESYMLINK' || code === 'ELOOP' || code === 'ENOTREGULAR' || code === 'EISDIR') {
        this.#left(temp, 'not-a-regular-file', `${c.name} is not a regular file (${code})`);
        return;
      }
      if (code === 'ETOO_LARGE') {
        this.#left(temp, 'not-a-payload', `${c.name} is larger than any payload`);
        return;
      }
      if (code === 'EACCES' || code === 'EPERM') {
        let owner: number | undefined;
        try {
          owner = fs.lstatSync(sys(temp)).uid;
        } catch {
          owner = undefined;
        }
        if (owner !== undefined && owner !== euid()) {
          this.#left(temp, 'foreign', `${c.name} belongs to uid ${String(owner)}; that uid's recovery salvages it`);
          return;
        }
      }
      this.#error(temp, err instanceof FsPolicyError ? (err.cause ?? err) : err, `cannot read ${temp}`);
      return;
    }
    const age = this.#now - file.stat.mtimeMs;
    // A live writer's temp is its own, however old: a stopped process (SIGSTOP, a paused VM) resumes and
    // renames it. Alive means its pid, in this pid namespace, belongs to a process that started before the
    // temp's last write (fs-policy's writerLiveness); only a temp whose writer cannot be checked waits for age.
    if (c.alive === true) {
      this.#left(temp, 'writer-alive', `its writer (pid ${String(c.pid)}) is alive (the file is ${String(Math.round(age))} ms old): a write in progress, or a stopped writer that will finish it`);
      return;
    }
    if (c.alive === null && age < this.#minAgeMs) {
      this.#left(temp, 'too-recent', `${String(Math.round(age))} ms old; a temp whose writer cannot be checked from here waits ${String(this.#minAgeMs)} ms`);
      return;
    }
    const verdict = incompleteBecause(file.data, c.target);
    if (verdict !== undefined && 'notPayload' in verdict) {
      this.#left(temp, 'not-a-payload', `${c.name}: ${verdict.notPayload}`);
      return;
    }
    if (verdict !== undefined) {
      this.#moveAside(c, temp, file.data.length, verdict.partial);
      return;
    }
    this.#adopt(c, temp, file.data, file.stat);
  }

  /**
   * Adopts a complete payload by content: the bytes that were read and verified (never the temp's name, which
   * a group member can point at another file meanwhile) are written to a new file under the final name —
   * created exclusively (`overwrite: false`), relative to the held spool, fsynced — and the temp name is then
   * removed only while it still names the inode that was read.
   */
  #adopt(c: Candidate, temp: string, bytes: Buffer, st: fs.Stats): void {
    const final = path.join(this.#loc.dir, c.target);
    const held = heldSpool(this.#loc.dir);
    if (held === undefined) {
      this.#error(temp, new FsPolicyError({ code: 'EUNEXPECTED', step: 'write', path: temp, message: 'the spool is not held' }), `cannot adopt ${temp} as ${final}`);
      return;
    }
    try {
      atomicWriteSync(held.at(c.target), bytes, {
        kind: SPOOL_KIND,
        env: this.#loc.env,
        durable: 'file',
        createParents: false,
        overwrite: false,
        root: held.self,
      });
    } catch (err) {
      if (codeOf(err) === 'EEXIST') {
        this.#existing(c, temp, final, bytes, st);
        return;
      }
      this.#error(temp, err instanceof FsPolicyError ? (err.cause ?? err) : err, `cannot adopt ${temp} as ${final}`);
      return;
    }
    this.#changed = true;
    this.report.adopted.push({ temp, path: final, bytes: bytes.length });
    this.#unlinkTemp(temp, st);
  }

  /** The final name exists: the temp is a redundant copy when the bytes are equal, else a conflict. */
  #existing(c: Candidate, temp: string, final: string, bytes: Buffer, st: fs.Stats): void {
    let current: Buffer | undefined;
    try {
      current = readRegular(final);
    } catch (err) {
      this.#left(temp, 'conflict', `${c.target} exists and cannot be compared (${codeOf(err)}); both are left`);
      return;
    }
    if (current === undefined) {
      // Removed meanwhile (recovered by a concurrent pass): the next salvage adopts the temp.
      this.#left(temp, 'conflict', `${c.target} vanished while ${c.name} was being compared; the next pass adopts it`);
      return;
    }
    if (!current.equals(bytes)) {
      this.#left(temp, 'conflict', `${c.target} exists with different content; both are left for the operator`);
      return;
    }
    this.report.duplicates.push({ temp, path: final });
    this.#unlinkTemp(temp, st);
  }

  /**
   * Removes the temp name only while it names the inode that was read: it is opened again (`O_NOFOLLOW`,
   * non-blocking, through the held spool) and its identity compared first. Another file in its place (a
   * group member renamed one there) is left, and reported. What remains is the window between that check and
   * the unlink: a member who renames a file onto the temp name inside it gets that name removed — a removal
   * the member, who can unlink any entry of a 2770 directory, could make directly.
   */
  #unlinkTemp(temp: string, st: fs.Stats): void {
    let now: fs.Stats | undefined;
    try {
      const fd = fs.openSync(sys(temp), READ_FLAGS);
      try {
        now = fs.fstatSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    } catch (err) {
      if (codeOf(err) === 'ENOENT') return;
      now = undefined;
    }
    if (now?.dev !== st.dev || now.ino !== st.ino) {
      this.#left(temp, 'conflict', `${path.basename(temp)} was replaced after it was read; its adopted bytes are in place and the file now under the temp name is left`);
      return;
    }
    try {
      fs.unlinkSync(sys(temp));
      this.#changed = true;
    } catch (err) {
      if (codeOf(err) !== 'ENOENT') this.#error(temp, err, `cannot remove the temp name ${temp} (its payload is in place; the next pass removes it)`);
    }
  }

  /** Renames an incomplete temp to `<name without the leading dot>.partial`, never over an existing file. */
  #moveAside(c: Candidate, temp: string, size: number, detail: string): void {
    const base = path.join(this.#loc.dir, `${c.name.slice(1)}.partial`);
    let target = base;
    for (let i = 1; ; i++) {
      try {
        fs.lstatSync(sys(target));
      } catch (err) {
        if (codeOf(err) === 'ENOENT') break;
        this.#error(target, err, `cannot examine ${target}`);
        return;
      }
      target = `${base}.${String(i)}`;
    }
    try {
      fs.renameSync(sys(temp), sys(target));
    } catch (err) {
      if (codeOf(err) !== 'ENOENT') this.#error(temp, err, `cannot move the incomplete ${temp} aside`);
      return;
    }
    this.#changed = true;
    this.report.partial.push({ temp, partialPath: target, bytes: size, detail });
  }

  #log(): void {
    const r = this.report;
    try {
      if (r.adopted.length > 0 || r.partial.length > 0 || r.duplicates.length > 0) {
        this.#logger.warn(
          `pending salvage: ${count(r.adopted.length)} complete payload(s) adopted from temp files, ` +
            `${count(r.duplicates.length)} redundant temp copy(ies) removed, ${count(r.partial.length)} incomplete temp file(s) moved aside as .partial`,
          { path: r.dir, adopted: r.adopted.length, duplicates: r.duplicates.length, partial: r.partial.length },
        );
      }
      const byReason = new Map<SalvageLeftReason, { n: number; first: string }>();
      for (const l of r.left) {
        const g = byReason.get(l.reason);
        if (g === undefined) byReason.set(l.reason, { n: 1, first: l.detail });
        else g.n++;
      }
      for (const [reason, g] of byReason) {
        const line = `pending salvage: ${count(g.n)} temp file(s) left in place (${reason}): ${g.first}`;
        if (reason === 'conflict' || reason === 'not-a-payload') this.#logger.warn(line, { path: r.dir });
        else this.#logger.info(line, { path: r.dir });
      }
      for (const e of r.errors) this.#logger.error(`pending salvage: ${e.message}`, { path: e.path, code: e.code, uid: euid(), hint: e.hint });
    } catch {
      // the report tells the story
    }
  }
}

/**
 * Adopts the complete payloads that killed writers left under temp names in `pending_messages/`, exactly
 * once, and moves incomplete ones aside as `.partial`. `recoverPending` runs it first; a tool that sweeps temp
 * files (`hermes-fs doctor`) must call it before, so that no complete payload is swept. Never throws for file problems
 * (they are in `errors`); never deletes anything but a temp name whose payload is in place under its final name.
 */
export function salvageTemps(options: SalvageOptions = {}): SalvageReport {
  let loc: SpoolLocation;
  try {
    loc = spoolLocation(options);
  } catch (err) {
    const p = options.home ?? '';
    const code = codeOf(err);
    return {
      dir: p,
      scanned: 0,
      adopted: [],
      duplicates: [],
      partial: [],
      left: [],
      errors: [{ path: p, code, message: messageOf(err), hint: hintFor(code, p, euid(), egid()) }],
      durable: true,
    };
  }
  return new Salvage(loc, options).run();
}
