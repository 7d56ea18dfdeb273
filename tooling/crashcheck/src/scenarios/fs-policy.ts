/**
 * The fs-policy primitives, each in its sync and async form: atomic write (replace, create, no-clobber create,
 * create with a new parent directory), private append, the append handle, secureMkdir and ensureFile.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  atomicWrite,
  atomicWriteSync,
  ensureFile,
  ensureFileSync,
  openAppendHandle,
  openAppendHandleSync,
  privateAppend,
  privateAppendSync,
  secureMkdir,
  secureMkdirSync,
} from '@hermes/fs-policy';
import type { CrashState, ModelName } from '../model.js';
import type { Scenario } from '../scenario.js';
import { envFor, filler, FSYNC_MUTATIONS, HOME, isFileFsync, modeText, namesIn, readState, strangers } from './util.js';

type Form = 'sync' | 'async';
const FORMS: readonly Form[] = ['sync', 'async'];

// ---- atomic write ------------------------------------------------------------------------------------------

export const OLD = Buffer.from(`${filler('old', 99)}\n`);
/** Two blocks and a bit: a crash can persist part of it. */
export const NEW = Buffer.from(`${filler('new', 8999)}\n`);
export const OLD_MODE = 0o644;
export const NEW_MODE = 0o600;
export const TARGET = `${HOME}/sessions/state.json`;

export type AtomicCase = 'replace' | 'create' | 'no-clobber' | 'new-directory';

/**
 * The atomic write's promise on one crash state: the target holds the old bytes with the old mode (only when it
 * existed, and only until the call returned) or the new bytes with the new mode; nothing beside it but fs-policy
 * temp and rollback files.
 */
export function checkAtomicTarget(dir: string, state: CrashState, hadOld: boolean): string[] {
  const out: string[] = [];
  const returned = state.marks.length > 0;
  const seen = readState(dir, TARGET);
  if (seen === undefined) {
    if (hadOld) out.push(`${TARGET} is missing (it existed before the write)`);
    else if (returned) out.push(`${TARGET} is missing although atomicWrite returned (durable: file+dir)`);
  } else if (seen.data.equals(NEW)) {
    if (seen.mode !== NEW_MODE) out.push(`${TARGET} holds the new bytes with mode ${modeText(seen.mode)}, not ${modeText(NEW_MODE)}`);
  } else if (hadOld && seen.data.equals(OLD)) {
    if (seen.mode !== OLD_MODE) out.push(`${TARGET} holds the old bytes with mode ${modeText(seen.mode)}, not ${modeText(OLD_MODE)}`);
    if (returned) out.push(`${TARGET} holds the old bytes although atomicWrite returned (durable: file+dir)`);
  } else {
    out.push(`${TARGET} holds ${String(seen.data.length)} bytes that are neither the old (${String(OLD.length)}) nor the new (${String(NEW.length)}) content`);
  }
  const others = strangers(dir, `${HOME}/sessions`, (n) => n === 'state.json');
  if (others.length > 0) out.push(`unexpected entries next to the target (not fs-policy temp files): ${others.join(', ')}`);
  return out;
}

/** Puts the old content (OLD, mode OLD_MODE) at TARGET: the state a replacing write starts from. */
export function seedOldTarget(root: string): void {
  fs.writeFileSync(path.join(root, TARGET), OLD);
  fs.chmodSync(path.join(root, TARGET), OLD_MODE);
}

/** The options of the atomic writes the scenarios make: the sessions kind, NEW_MODE, no-clobber when asked. */
export function atomicOptions(root: string, noClobber: boolean): { kind: 'sessions'; env: ReturnType<typeof envFor>; mode: number; overwrite?: boolean } {
  return { kind: 'sessions', env: envFor(root), mode: NEW_MODE, ...(noClobber ? { overwrite: false } : {}) };
}

function atomicScenario(kase: AtomicCase, form: Form): Scenario {
  const hadOld = kase === 'replace';
  const label: Record<AtomicCase, string> = {
    replace: 'atomicWrite (replace)',
    create: 'atomicWrite (create)',
    'no-clobber': 'atomicWrite (overwrite: false)',
    'new-directory': 'atomicWrite (new parent directory)',
  };
  return {
    protocol: label[kase],
    form,
    promise: hadOld
      ? 'the target holds the old bytes with the old mode or the new bytes with the new mode, never a mix or an empty file; the new ones once the call returned'
      : 'the target is absent or holds the new bytes with the new mode, never a part of them; present once the call returned',
    setup(root) {
      fs.mkdirSync(path.join(root, HOME), { mode: 0o700 });
      if (kase !== 'new-directory') fs.mkdirSync(path.join(root, HOME, 'sessions'), { mode: 0o700 });
      if (hadOld) seedOldTarget(root);
    },
    async run(root, rec) {
      const options = atomicOptions(root, kase === 'no-clobber');
      const target = path.join(root, TARGET);
      if (form === 'sync') atomicWriteSync(target, NEW, options);
      else await atomicWrite(target, NEW, options);
      rec.mark('atomicWrite returned');
    },
    check({ dir, state }) {
      return checkAtomicTarget(dir, state, hadOld);
    },
    mutations: FSYNC_MUTATIONS,
  };
}

// ---- private append and the append handle -------------------------------------------------------------------

/** Five records of about 1.5 KiB: the third crosses the first block boundary, the fifth the second. */
const RECORDS = Array.from({ length: 5 }, (_v, i) => Buffer.from(`${JSON.stringify({ i, text: filler(`rec${String(i)}`, 1500) })}\n`));
const STREAM = Buffer.concat(RECORDS);
const ENDS = RECORDS.reduce<number[]>((acc, r) => [...acc, (acc[acc.length - 1] ?? 0) + r.length], []);
const LOG = `${HOME}/trajectories/log.jsonl`;

/**
 * Private append's promise on one crash state: the file is a prefix of the records in call order (POSIX only:
 * bytes not yet written may read as zeros), every record a call reported written is there intact, and what
 * follows the last intact record is one fragment with no newline in it.
 */
export function checkAppendLog(dir: string, rel: string, reported: readonly number[], model: ModelName, stream: Buffer, ends: readonly number[]): string[] {
  const out: string[] = [];
  const seen = readState(dir, rel);
  const content = seen?.data ?? Buffer.alloc(0);
  if (content.length > stream.length) return [`${rel} holds ${String(content.length)} bytes, more than the ${String(stream.length)} appended`];
  let exact = 0;
  while (exact < content.length && content[exact] === stream[exact]) exact++;
  for (let i = exact; i < content.length; i++) {
    if (model !== 'posix' || (content[i] !== 0 && content[i] !== stream[i])) {
      out.push(`${rel} differs from the appended records at byte ${String(i)}`);
      break;
    }
  }
  for (const r of reported) {
    const end = ends[r] ?? 0;
    if (exact < end) out.push(`record ${String(r)} was reported written (fsync) but ${rel} ${seen === undefined ? 'does not exist' : `holds only ${String(exact)} intact bytes of the ${String(end)} it needs`}`);
  }
  // The intact records, then at most one fragment: no newline after the last intact record boundary.
  const intact = [0, ...ends].filter((e) => e <= exact).pop() ?? 0;
  if (content.subarray(intact).includes(0x0a)) {
    out.push(`a torn record reads as a complete line: bytes ${String(intact)}..${String(content.length)} of ${rel} hold a newline but are not an intact record`);
  }
  return out;
}

function appendScenario(form: Form): Scenario {
  return {
    protocol: 'privateAppend (fsync)',
    form,
    promise: 'every record a call reported written (fsync: true) is present and intact; a torn record only as one final fragment',
    setup(root) {
      fs.mkdirSync(path.join(root, HOME, 'trajectories'), { recursive: true, mode: 0o700 });
    },
    async run(root, rec) {
      const options = { kind: 'trajectories' as const, env: envFor(root), fsync: true };
      for (const [i, r] of RECORDS.entries()) {
        if (form === 'sync') privateAppendSync(path.join(root, LOG), r, options);
        else await privateAppend(path.join(root, LOG), r, options);
        rec.mark(`privateAppend of record ${String(i)} returned`, i);
      }
    },
    check({ dir, state, model }) {
      return checkAppendLog(dir, LOG, state.marks.map((m) => m.data as number), model, STREAM, ENDS);
    },
    mutations: [{ name: 'no-file-fsync', description: 'the fsync after each record is dropped', drop: isFileFsync }],
  };
}

function handleScenario(form: Form): Scenario {
  return {
    protocol: 'append handle (fsync)',
    form,
    promise: 'every record whose append settled (fsync: true) is present and intact; a torn record only as one final fragment',
    setup(root) {
      fs.mkdirSync(path.join(root, HOME, 'trajectories'), { recursive: true, mode: 0o700 });
    },
    async run(root, rec) {
      const options = { kind: 'trajectories' as const, env: envFor(root), fsync: true };
      const file = path.join(root, LOG);
      if (form === 'sync') {
        const h = openAppendHandleSync(file, options);
        for (const [i, r] of RECORDS.entries()) {
          h.appendSync(r);
          rec.mark(`appendSync of record ${String(i)} returned`, i);
        }
        h.closeSync();
        return;
      }
      const h = await openAppendHandle(file, options);
      // Three appends issued together (one group commit), then two more one by one.
      await Promise.all(
        RECORDS.slice(0, 3).map((r, i) =>
          h.append(r).then(() => {
            rec.mark(`append of record ${String(i)} settled`, i);
          }),
        ),
      );
      for (const [k, r] of RECORDS.slice(3).entries()) {
        await h.append(r);
        rec.mark(`append of record ${String(k + 3)} settled`, k + 3);
      }
      await h.close();
    },
    check({ dir, state, model }) {
      return checkAppendLog(dir, LOG, state.marks.map((m) => m.data as number), model, STREAM, ENDS);
    },
    mutations: [{ name: 'no-file-fsync', description: 'the fsync after each write is dropped', drop: isFileFsync }],
  };
}

// ---- secureMkdir and ensureFile: never a mode wider than the kind's ------------------------------------------

function mkdirScenario(form: Form): Scenario {
  const levels = [`${HOME}/sessions`, `${HOME}/sessions/saved`];
  return {
    protocol: 'secureMkdir (two new levels)',
    form,
    promise: 'every level it creates is absent or has no permission bit beyond the kind\'s 0700',
    setup(root) {
      fs.mkdirSync(path.join(root, HOME), { mode: 0o700 });
    },
    async run(root, rec) {
      const dir = path.join(root, HOME, 'sessions', 'saved');
      if (form === 'sync') secureMkdirSync(dir, 'saved-sessions', { env: envFor(root) });
      else await secureMkdir(dir, 'saved-sessions', { env: envFor(root) });
      rec.mark('secureMkdir returned');
    },
    check({ dir }) {
      const out: string[] = [];
      for (const rel of levels) {
        let st: fs.Stats;
        try {
          st = fs.lstatSync(path.join(dir, rel));
        } catch {
          continue;
        }
        const mode = st.mode & 0o7777;
        if (!st.isDirectory()) out.push(`${rel} is not a directory`);
        else if ((mode & ~0o700) !== 0) out.push(`${rel} has mode ${modeText(mode)}, wider than 0700`);
      }
      return out;
    },
  };
}

function ensureFileScenario(form: Form): Scenario {
  const rel = `${HOME}/state.db`;
  return {
    protocol: 'ensureFile',
    form,
    promise: 'the file is absent or empty with no permission bit beyond the kind\'s 0600',
    setup(root) {
      fs.mkdirSync(path.join(root, HOME), { mode: 0o700 });
    },
    async run(root, rec) {
      const file = path.join(root, rel);
      if (form === 'sync') ensureFileSync(file, { kind: 'state-db', env: envFor(root) });
      else await ensureFile(file, { kind: 'state-db', env: envFor(root) });
      rec.mark('ensureFile returned');
    },
    check({ dir }) {
      const seen = readState(dir, rel);
      const out: string[] = [];
      if (seen === undefined) {
        if (namesIn(dir, HOME).includes('state.db')) out.push(`${rel} is not a regular file`);
        return out;
      }
      if (seen.data.length > 0) out.push(`${rel} is not empty`);
      if ((seen.mode & ~0o600) !== 0) out.push(`${rel} has mode ${modeText(seen.mode)}, wider than 0600`);
      return out;
    },
  };
}

export function fsPolicyScenarios(): Scenario[] {
  const out: Scenario[] = [];
  for (const kase of ['replace', 'create', 'no-clobber', 'new-directory'] as const) for (const f of FORMS) out.push(atomicScenario(kase, f));
  for (const f of FORMS) out.push(appendScenario(f));
  for (const f of FORMS) out.push(handleScenario(f));
  for (const f of FORMS) out.push(mkdirScenario(f));
  for (const f of FORMS) out.push(ensureFileScenario(f));
  return out;
}
