/**
 * The persistence models and the crash-state enumerator. docs/crash-model.md states the rules in prose; this
 * file is their one implementation. For every prefix of the recorded operations (a crash right after the
 * k-th operation) it yields every state the model allows a power loss to leave, as a model tree.
 */
import { applyMeta } from './apply.js';
import { type DbCommitOp, isEntryOp, isMeta, type MarkOp, type ModelOp, parentsOf, type WriteOp } from './ops.js';
import type { Recording } from './recorder.js';
import { cloneTree, type Tree } from './tree.js';

export type ModelName = 'ext4' | 'posix';

/** The block size unsynced appended data is persisted in (ext4's default block and the page size). */
export const BLOCK = 4096;

export interface Limits {
  /** Unforced metadata operations enumerated as subsets in POSIX mode (2^n states). */
  readonly maxFreeMeta: number;
  /** Distinct states per scenario and model; more is an error, never a silent cut. */
  readonly maxStates: number;
}

export const DEFAULT_LIMITS: Limits = { maxFreeMeta: 14, maxStates: 20_000 };

export class BoundError extends Error {
  override readonly name = 'BoundError';
}

export class ModelError extends Error {
  override readonly name = 'ModelError';
}

/** One crash state: the tree a reboot would find, and what the run had done and promised by then. */
export interface CrashState {
  /** Operations issued before the crash (a prefix of the log). */
  readonly cut: number;
  readonly tree: Tree;
  /** Database transactions durable in this state, in commit order (their payloads). */
  readonly db: readonly unknown[];
  /** Indices (into the operation log) of issued operations this state lost, wholly or in part. */
  readonly lost: readonly number[];
  /** How each partly persisted write was cut, for the report. */
  readonly partial: readonly string[];
  /** Promises made before the crash. */
  readonly marks: readonly MarkOp[];
}

/** The inodes an operation touches (what an ext4 fsync of that inode must commit up to). */
function touches(op: ModelOp): number[] {
  switch (op.kind) {
    case 'mkdir':
    case 'create':
      return [op.parent, op.ino];
    case 'tmpfile':
      return [op.ino];
    case 'link':
    case 'unlink':
      return [op.parent, op.ino];
    case 'rename':
      return [op.fromParent, op.toParent, op.ino, ...(op.replaced === undefined ? [] : [op.replaced])];
    case 'chmod':
    case 'truncate':
    case 'write':
      return [op.ino];
    default:
      return [];
  }
}

/** The entry (parent, name → ino) an operation consumes, and the one it produces. */
function consumes(op: ModelOp): { parent: number; name: string; ino: number } | undefined {
  if (op.kind === 'rename') return { parent: op.fromParent, name: op.fromName, ino: op.ino };
  if (op.kind === 'unlink') return { parent: op.parent, name: op.name, ino: op.ino };
  return undefined;
}

function produces(op: ModelOp): { parent: number; name: string; ino: number } | undefined {
  if (op.kind === 'mkdir' || op.kind === 'create' || op.kind === 'link') return { parent: op.parent, name: op.name, ino: op.ino };
  if (op.kind === 'rename') return { parent: op.toParent, name: op.toName, ino: op.ino };
  return undefined;
}

interface FileChoice {
  readonly ino: number;
  /** Bytes of the eligible appended stream that persist. */
  readonly keep: number;
  /** Blocks (absolute block numbers) of the persisted range that read as zeros (POSIX mode only). */
  readonly zero: readonly number[];
}

interface FilePlan {
  readonly ino: number;
  readonly base: Buffer;
  /** Absolute offset below which the file's bytes are durable (its base plus what an fsync flushed). */
  readonly durable: number;
  readonly writes: readonly { index: number; op: WriteOp }[];
  readonly choices: readonly FileChoice[];
}

/** Precomputed facts about the log. */
class Log {
  readonly ops: readonly ModelOp[];
  /** For each operation, the operations that must persist whenever it persists (POSIX mode). */
  readonly deps: readonly number[][];
  readonly commits = new Map<number, DbCommitOp>();

  constructor(ops: readonly ModelOp[]) {
    this.ops = ops;
    const producer = new Map<string, number>();
    const created = new Map<number, number>();
    const deps: number[][] = [];
    ops.forEach((op, i) => {
      const d: number[] = [];
      const c = consumes(op);
      if (c !== undefined) {
        const j = producer.get(`${String(c.parent)}/${c.name}/${String(c.ino)}`);
        if (j !== undefined) d.push(j);
      }
      if (op.kind === 'link') {
        const j = created.get(op.ino);
        if (j !== undefined) d.push(j);
      }
      deps.push(d);
      const p = produces(op);
      if (p !== undefined) producer.set(`${String(p.parent)}/${p.name}/${String(p.ino)}`, i);
      if (op.kind === 'create' || op.kind === 'mkdir' || op.kind === 'tmpfile') created.set(op.ino, i);
      if (op.kind === 'db-commit') this.commits.set(op.id, op);
    });
    this.deps = deps;
  }
}

/** The metadata operations a crash after `cut` operations must keep (forced by a completed fsync), per model. */
function forcedMeta(log: Log, cut: number, model: ModelName): Set<number> {
  const forced = new Set<number>();
  const ops = log.ops;
  for (let f = 0; f < cut; f++) {
    const s = ops[f];
    if (s?.kind !== 'fsync') continue;
    if (model === 'ext4') {
      // jbd2 commits the transaction holding the inode's last change, and every transaction before it: the
      // journal prefix up to the last operation that touched the inode.
      let last = -1;
      for (let t = f - 1; t >= 0; t--) {
        const op = ops[t];
        if (op !== undefined && touches(op).includes(s.ino)) {
          last = t;
          break;
        }
      }
      for (let t = 0; t <= last; t++) {
        const op = ops[t];
        if (op !== undefined && isMeta(op)) forced.add(t);
      }
    } else {
      // POSIX: a directory fsync makes that directory's entries durable; a file fsync its inode (mode, size).
      for (let t = 0; t < f; t++) {
        const op = ops[t];
        if (op === undefined || !isMeta(op)) continue;
        if (s.dir && isEntryOp(op) && parentsOf(op).includes(s.ino)) forced.add(t);
        else if ((op.kind === 'chmod' || op.kind === 'truncate') && op.ino === s.ino) forced.add(t);
      }
    }
  }
  if (model === 'posix') {
    // What a forced operation depends on is forced too.
    const stack = [...forced];
    while (stack.length > 0) {
      const i = stack.pop() ?? -1;
      for (const d of log.deps[i] ?? []) {
        if (!forced.has(d)) {
          forced.add(d);
          stack.push(d);
        }
      }
    }
  }
  return forced;
}

/** The sets of metadata operations (indices) that may have persisted after a crash at `cut`. */
function* metaChoices(log: Log, cut: number, model: ModelName, limits: Limits): Generator<Set<number>> {
  const ops = log.ops;
  const meta: number[] = [];
  for (let i = 0; i < cut; i++) {
    const op = ops[i];
    if (op !== undefined && isMeta(op)) meta.push(i);
  }
  const forced = forcedMeta(log, cut, model);
  if (model === 'ext4') {
    // The journal persists a prefix of the metadata operations, at least up to the last forced one.
    let min = 0;
    meta.forEach((i, pos) => {
      if (forced.has(i)) min = pos + 1;
    });
    for (let j = meta.length; j >= min; j--) yield new Set(meta.slice(0, j));
    return;
  }
  const free = meta.filter((i) => !forced.has(i));
  if (free.length > limits.maxFreeMeta) {
    throw new BoundError(
      `${String(free.length)} unsynced metadata operations at crash point ${String(cut)} (POSIX mode enumerates 2^n subsets; the bound is ${String(limits.maxFreeMeta)})`,
    );
  }
  // Largest subsets first: the states closest to "nothing lost" come first.
  const masks = Array.from({ length: 1 << free.length }, (_v, m) => m).sort((a, b) => popcount(b) - popcount(a));
  for (const mask of masks) {
    const set = new Set(forced);
    free.forEach((i, bit) => {
      if ((mask & (1 << bit)) !== 0) set.add(i);
    });
    let consistent = true;
    for (const i of set) {
      if ((log.deps[i] ?? []).some((d) => !set.has(d))) {
        consistent = false;
        break;
      }
    }
    if (consistent) yield set;
  }
}

function popcount(n: number): number {
  let c = 0;
  for (let x = n; x !== 0; x &= x - 1) c++;
  return c;
}

/** Per file written before the crash: its base content and the ways its appended bytes may have persisted. */
function filePlans(rec: Recording, log: Log, cut: number, persisted: Set<number>, model: ModelName): FilePlan[] {
  const ops = log.ops;
  const byIno = new Map<number, number[]>();
  for (let i = 0; i < cut; i++) {
    const op = ops[i];
    if (op?.kind === 'write' || op?.kind === 'truncate' || op?.kind === 'create' || op?.kind === 'tmpfile' || op?.kind === 'fsync') {
      const list = byIno.get(op.ino) ?? [];
      list.push(i);
      byIno.set(op.ino, list);
    }
  }
  const plans: FilePlan[] = [];
  for (const [ino, idx] of byIno) {
    if (!idx.some((i) => ops[i]?.kind === 'write')) continue;
    // Where the persisted content starts: the file's creation, or its last persisted truncate.
    let start = -1;
    let base: Buffer;
    const initial = rec.initial.nodes.get(ino);
    base = initial?.kind === 'file' ? initial.data : Buffer.alloc(0);
    let volatile = Buffer.from(base);
    let created = false;
    for (const i of idx) {
      const op = ops[i];
      if (op?.kind === 'create' || op?.kind === 'tmpfile') {
        created = true;
        if (!persisted.has(i)) break;
        start = i;
        base = Buffer.alloc(0);
        volatile = Buffer.alloc(0);
      } else if (op?.kind === 'truncate') {
        if (persisted.has(i)) {
          start = i;
          base = volatile.subarray(0, op.length);
        }
        volatile = volatile.subarray(0, op.length);
      } else if (op?.kind === 'write') {
        const end = op.offset + op.data.length;
        const next = Buffer.alloc(Math.max(volatile.length, end));
        volatile.copy(next, 0);
        op.data.copy(next, op.offset);
        volatile = next;
      }
    }
    const createOp = idx.find((i) => ops[i]?.kind === 'create' || ops[i]?.kind === 'tmpfile');
    if (created && (createOp === undefined || !persisted.has(createOp))) continue; // never reachable
    // The appended stream: writes after the base, up to the first unpersisted size change.
    const writes: { index: number; op: WriteOp }[] = [];
    let expected = base.length;
    let floor = 0;
    let total = 0;
    for (const i of idx) {
      if (i <= start) continue;
      const op = ops[i];
      if (op?.kind === 'truncate' && !persisted.has(i)) break;
      if (op?.kind === 'fsync') floor = total;
      if (op?.kind !== 'write') continue;
      if (op.offset !== expected) {
        throw new ModelError(`write #${String(i)} lands at offset ${String(op.offset)}, not at the end (${String(expected)}): only appends are modelled`);
      }
      writes.push({ index: i, op });
      expected += op.data.length;
      total += op.data.length;
    }
    if (writes.length === 0) continue;
    // Persisted lengths: the synced floor, every block boundary above it, everything.
    const lengths = new Set<number>([floor, total]);
    for (let b = (Math.floor((base.length + floor) / BLOCK) + 1) * BLOCK; b < base.length + total; b += BLOCK) lengths.add(b - base.length);
    const choices: FileChoice[] = [];
    for (const keep of [...lengths].sort((a, b) => b - a)) {
      choices.push({ ino, keep, zero: [] });
      if (model !== 'posix' || keep <= floor) continue;
      // POSIX only: the size may persist before the data; unwritten blocks read as zeros.
      const first = Math.floor((base.length + floor) / BLOCK);
      const last = Math.floor((base.length + keep - 1) / BLOCK);
      const blocks = Array.from({ length: last - first + 1 }, (_v, k) => first + k);
      const patterns = blocks.length <= 3 ? Array.from({ length: (1 << blocks.length) - 1 }, (_v, m) => m + 1) : [(1 << blocks.length) - 1];
      for (const m of patterns) choices.push({ ino, keep, zero: blocks.filter((_b, k) => (m & (1 << k)) !== 0) });
    }
    plans.push({ ino, base, durable: base.length + floor, writes, choices });
  }
  return plans;
}

function* product<T>(lists: readonly (readonly T[])[]): Generator<T[]> {
  if (lists.length === 0) {
    yield [];
    return;
  }
  const [head, ...rest] = lists;
  for (const x of head ?? []) for (const tail of product(rest)) yield [x, ...tail];
}

/**
 * Every crash state of the recording under `model`, prefix by prefix. States are not deduplicated here (the
 * caller keys them by their digest and the promises in force).
 */
export function* crashStates(rec: Recording, model: ModelName, limits: Limits = DEFAULT_LIMITS): Generator<CrashState> {
  const log = new Log(rec.ops);
  const ops = log.ops;
  for (let cut = 0; cut <= ops.length; cut++) {
    const marks = ops.slice(0, cut).filter((o): o is MarkOp => o.kind === 'mark');
    // Database transactions: durable once their commit returned; one in flight may or may not be.
    const committed: DbCommitOp[] = [];
    const inFlight: DbCommitOp[] = [];
    for (let i = 0; i < cut; i++) {
      const op = ops[i];
      if (op?.kind === 'db-commit') committed.push(op);
      if (op?.kind === 'db-begin') {
        const done = ops.slice(i + 1, cut).some((o) => o.kind === 'db-commit' && o.id === op.id);
        const later = log.commits.get(op.id);
        if (!done && later !== undefined) inFlight.push(later);
      }
    }
    let dbOptions: { db: DbCommitOp[]; lost: number[] }[] = [{ db: committed, lost: [] }];
    for (const c of inFlight) {
      const begin = ops.findIndex((o) => o.kind === 'db-begin' && o.id === c.id);
      dbOptions = dbOptions.flatMap((opt) => [
        { db: [...opt.db, c], lost: opt.lost },
        { db: opt.db, lost: [...opt.lost, begin] },
      ]);
    }
    for (const persisted of metaChoices(log, cut, model, limits)) {
      const base = cloneTree(rec.initial);
      const lostMeta: number[] = [];
      for (let i = 0; i < cut; i++) {
        const op = ops[i];
        if (op === undefined || !isMeta(op)) continue;
        if (persisted.has(i)) applyMeta(base, op);
        else lostMeta.push(i);
      }
      const plans = filePlans(rec, log, cut, persisted, model);
      // Writes whose file never became reachable are lost as well.
      const planned = new Set(plans.flatMap((p) => p.writes.map((w) => w.index)));
      const unreachable: number[] = [];
      for (let i = 0; i < cut; i++) if (ops[i]?.kind === 'write' && !planned.has(i)) unreachable.push(i);
      for (const combo of product(plans.map((p) => p.choices))) {
        const tree = cloneTree(base);
        const lost = [...lostMeta, ...unreachable];
        const partial: string[] = [];
        combo.forEach((choice, k) => {
          const plan = plans[k];
          if (plan === undefined) return;
          const node = tree.nodes.get(plan.ino);
          const stream = Buffer.concat(plan.writes.map((w) => w.op.data));
          const data = Buffer.concat([plan.base, stream.subarray(0, choice.keep)]);
          for (const b of choice.zero) {
            const from = Math.max(b * BLOCK, plan.durable);
            data.fill(0, Math.min(from, data.length), Math.min((b + 1) * BLOCK, data.length));
          }
          if (node?.kind === 'file') node.data = data;
          let before = 0;
          for (const w of plan.writes) {
            const len = w.op.data.length;
            const kept = Math.max(0, Math.min(len, choice.keep - before));
            if (kept < len) {
              lost.push(w.index);
              if (kept > 0) partial.push(`#${String(w.index)}: ${String(kept)} of ${String(len)} bytes persisted`);
            }
            before += len;
          }
          if (choice.zero.length > 0) partial.push(`blocks ${choice.zero.join(', ')} of the file read as zeros (size persisted before data)`);
        });
        for (const opt of dbOptions) {
          yield {
            cut,
            tree,
            db: opt.db.map((c) => c.payload),
            lost: [...lost, ...opt.lost].sort((a, b) => a - b),
            partial,
            marks,
          };
        }
      }
    }
  }
}
