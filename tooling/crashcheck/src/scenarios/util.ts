/** Helpers shared by the scenarios: an environment that ignores the caller's, and reading a crash state. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type HermesEnvironment, loadEnvironment, TEMP_FILE_PATTERN } from '@hermes/fs-policy';
import type { Req } from '@hermes/fs-policy/testing';
import type { Mutation } from '../scenario.js';

/** The home every scenario uses, below the recorded root. */
export const HOME = 'home';

/** An unmanaged environment for `home`, independent of the variables of the process running the check. */
export function envFor(root: string): HermesEnvironment {
  return loadEnvironment({ home: path.join(root, HOME), env: {} });
}

export interface Seen {
  readonly data: Buffer;
  readonly mode: number;
}

/** A regular file of the crash state, or undefined when there is none at `rel`. */
export function readState(dir: string, rel: string): Seen | undefined {
  const p = path.join(dir, rel);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch {
    return undefined;
  }
  if (!st.isFile()) return undefined;
  return { data: fs.readFileSync(p), mode: st.mode & 0o7777 };
}

/** The names in a directory of the crash state (empty when it does not exist). */
export function namesIn(dir: string, rel: string): string[] {
  try {
    return fs.readdirSync(path.join(dir, rel)).sort();
  } catch {
    return [];
  }
}

export function modeText(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

/** Entries of `rel` that are neither `allowed` nor temp/rollback files of fs-policy (which the sweep removes). */
export function strangers(dir: string, rel: string, allowed: (name: string) => boolean): string[] {
  return namesIn(dir, rel).filter((n) => !allowed(n) && !TEMP_FILE_PATTERN.test(n));
}

/** The protocols' fsyncs, as the fault port labels them. */
export const isFileFsync = (req: Req): boolean => req.op === 'fsync' && req.step === 'fsync';
export const isDirFsync = (req: Req): boolean => req.op === 'fsync' && req.step === 'fsync-dir';

/** The two fsync mutations every durable protocol must be caught without. */
export const FSYNC_MUTATIONS: readonly Mutation[] = [
  { name: 'no-file-fsync', description: 'the fsync of the file (before the rename, after the write) is dropped', drop: isFileFsync },
  { name: 'no-dir-fsync', description: 'the fsync of the directory (after the rename) is dropped', drop: isDirFsync },
];

/** Deterministic text of `n` bytes (printable, no newline), different per `seed`. */
export function filler(seed: string, n: number): string {
  let out = '';
  let i = 0;
  while (out.length < n) out += `${seed}-${String(i++)} `;
  return out.slice(0, n);
}
