/**
 * fs-policy's atomic write with an unnamed temp file (`O_TMPFILE`, the native layer): replace, create and
 * no-clobber create, each sync and async. The file has no name until it is complete and fsynced; then it is
 * linked to the target (no-clobber) or to a temp name renamed over the target. Only the native layer can name an
 * open file, so these protocols are listed only where it is in force ({@link tmpfileUnavailable} says why not).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { anchorInfo, atomicWrite, atomicWriteSync, TEMP_FILE_PATTERN, type WriteResult } from '@hermes/fs-policy';
import type { Req } from '@hermes/fs-policy/testing';
import type { Mutation, Scenario } from '../scenario.js';
import { type AtomicCase, atomicOptions, checkAtomicTarget, NEW, NEW_MODE, OLD, OLD_MODE, seedOldTarget, TARGET } from './fs-policy.js';
import { FSYNC_MUTATIONS, HOME, isFileFsync, modeText, namesIn, readState } from './util.js';

type Form = 'sync' | 'async';
type TmpfileCase = Exclude<AtomicCase, 'new-directory'>;

const LABEL: Record<TmpfileCase, string> = {
  replace: 'atomicWrite, O_TMPFILE (replace)',
  create: 'atomicWrite, O_TMPFILE (create)',
  'no-clobber': 'atomicWrite, O_TMPFILE (overwrite: false)',
};

/** The first name the unnamed file is given (the target, or the temp name then renamed). */
const isNaming = (req: Req): boolean => req.op === 'link' && req.step === 'link';

/**
 * The planted bug: the unnamed file is named before its fsync (the fsync is held back until right after the
 * link), so a name can reach a file whose data is not durable.
 */
export const LINK_BEFORE_FSYNC: Mutation = {
  name: 'link-before-fsync',
  description: 'the fsync of the unnamed file is made only after the link that names it',
  defer: { hold: isFileFsync, until: isNaming },
};

/** Why the O_TMPFILE protocols cannot be recorded in this process, or undefined when they can. */
export function tmpfileUnavailable(): string | undefined {
  const a = anchorInfo();
  return a.mode === 'native' ? undefined : `fs-policy's native layer is not in force (${a.mode}: ${a.reason})`;
}

/**
 * Beyond the atomic write's promise: no partial temp. Every fs-policy temp file beside the target holds the
 * complete new bytes with the new mode (it was named only once complete and fsynced); a rollback copy the old.
 */
function checkTemps(dir: string): string[] {
  const out: string[] = [];
  for (const n of namesIn(dir, `${HOME}/sessions`)) {
    const m = TEMP_FILE_PATTERN.exec(n);
    if (m === null) continue;
    const rel = `${HOME}/sessions/${n}`;
    const seen = readState(dir, rel);
    const [want, mode] = m[5] === 'bak' ? [OLD, OLD_MODE] : [NEW, NEW_MODE];
    if (seen === undefined) out.push(`${rel} is not a regular file`);
    else if (!seen.data.equals(want)) out.push(`${rel} is a partial temp: ${String(seen.data.length)} bytes, not the complete ${String(want.length)}`);
    else if (seen.mode !== mode) out.push(`${rel} has mode ${modeText(seen.mode)}, not ${modeText(mode)}`);
  }
  return out;
}

function tmpfileScenario(kase: TmpfileCase, form: Form): Scenario {
  const hadOld = kase === 'replace';
  return {
    protocol: LABEL[kase],
    form,
    tmpfile: true,
    promise: `${
      hadOld
        ? 'the target holds the old bytes with the old mode or the new bytes with the new mode, never a mix or an empty file; the new ones once the call returned'
        : 'the target is absent or holds the new bytes with the new mode, never a part of them; present once the call returned'
    }; a temp file beside it only complete, with the new mode`,
    setup(root) {
      fs.mkdirSync(path.join(root, HOME, 'sessions'), { recursive: true, mode: 0o700 });
      if (hadOld) seedOldTarget(root);
    },
    async run(root, rec) {
      const options = atomicOptions(root, kase === 'no-clobber');
      const target = path.join(root, TARGET);
      const r: WriteResult = form === 'sync' ? atomicWriteSync(target, NEW, options) : await atomicWrite(target, NEW, options);
      if (r.temp !== 'tmpfile') throw new Error(`the write staged its content in a ${r.temp} temp file, not an O_TMPFILE one: this filesystem has no unnamed files`);
      rec.mark('atomicWrite returned');
    },
    check({ dir, state }) {
      return [...checkAtomicTarget(dir, state, hadOld), ...checkTemps(dir)];
    },
    mutations: [...FSYNC_MUTATIONS, LINK_BEFORE_FSYNC],
  };
}

/** The O_TMPFILE protocols, where the native layer is in force (none otherwise). */
export function tmpfileScenarios(): Scenario[] {
  if (tmpfileUnavailable() !== undefined) return [];
  const out: Scenario[] = [];
  for (const kase of ['replace', 'create', 'no-clobber'] as const) for (const f of ['sync', 'async'] as const) out.push(tmpfileScenario(kase, f));
  return out;
}
