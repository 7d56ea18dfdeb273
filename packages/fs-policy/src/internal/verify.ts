/**
 * What an existing file must be before the runtime writes into it or carries its mode over: checked on a
 * descriptor's (or a just-taken lstat's) view, never on a path looked up again.
 */
import type * as fs from 'node:fs';
import { currentUid, FsPolicyError } from '../errors.js';
import type { HermesEnvironment } from '../env.js';
import { fileCeilingFor, formatMode, getKind, type KindRef } from '../registry.js';

/**
 * The uids whose files the runtime may write into or replace. As root: root and the home's owner — never the
 * owner of an explicit root or of the file itself — plus HERMES_UID where the kind applies ownership (the
 * owner root gives such files). Otherwise: this process's uid, plus HERMES_UID where the kind applies it.
 * `uid`: the effective uid the operation acts as (read once per operation; default: read now).
 */
export function allowedOwners(env: HermesEnvironment, homeOwner: number | undefined, ref: KindRef, uid = currentUid()): ReadonlySet<number> {
  const set = new Set<number>([uid]);
  if (env.uid !== undefined && getKind(ref).ownership) set.add(env.uid);
  if (uid === 0 && homeOwner !== undefined) set.add(homeOwner);
  return set;
}

export function checkRegular(p: string, st: fs.Stats, step: 'resolve' | 'verify' | 'open'): void {
  if (st.isDirectory()) throw new FsPolicyError({ code: 'EISDIR', step, path: p, message: `${p} is a directory` });
  if (st.isSymbolicLink()) throw new FsPolicyError({ code: 'ESYMLINK', step, path: p, message: `${p} is a symbolic link` });
  if (!st.isFile()) throw new FsPolicyError({ code: 'ENOTREGULAR', step, path: p, message: `${p} is not a regular file (a FIFO, socket or device)` });
}

/** The file must be owned by one of {@link allowedOwners}, or EFOREIGN_OWNER names its owner. */
export function checkOwner(
  p: string,
  st: fs.Stats,
  env: HermesEnvironment,
  homeOwner: number | undefined,
  ref: KindRef,
  what: string,
  uid = currentUid(),
): void {
  const owners = allowedOwners(env, homeOwner, ref, uid);
  if (!owners.has(st.uid)) {
    throw new FsPolicyError({
      code: 'EFOREIGN_OWNER',
      step: 'verify',
      path: p,
      message: `refusing to ${what} ${p}: it is owned by uid ${String(st.uid)}, not by ${[...owners].map(String).join(' or ')}`,
    });
  }
}

/** Append: a regular file of ours, one link, no write access for others beyond the kind's ceiling. */
export function verifyForAppend(p: string, st: fs.Stats, ref: KindRef, env: HermesEnvironment, homeOwner: number | undefined, uid = currentUid()): void {
  checkRegular(p, st, 'verify');
  checkOwner(p, st, env, homeOwner, ref, 'append to', uid);
  if (st.nlink !== 1) {
    throw new FsPolicyError({
      code: 'EHARDLINK',
      step: 'verify',
      path: p,
      message: `refusing to append to ${p}: it has ${String(st.nlink)} hard links, so what is appended is readable under another name`,
    });
  }
  const ceiling = fileCeilingFor(ref, env);
  const mode = st.mode & 0o777;
  if ((mode & ~ceiling) !== 0) {
    throw new FsPolicyError({
      code: 'EMODE_TOO_WIDE',
      step: 'verify',
      path: p,
      message: `refusing to append to ${p}: mode ${formatMode(mode)} is wider than ${formatMode(ceiling)} (group/other write)`,
    });
  }
}

/**
 * Replace: the file must be a regular file of a trusted owner (someone else's file is never replaced, and as
 * root its owner is never given the new content); its mode is carried
 * over only when it has one link and stays within the kind's ceiling, otherwise the kind's mode applies.
 */
export function verifyForReplace(
  p: string,
  st: fs.Stats,
  ref: KindRef,
  env: HermesEnvironment,
  homeOwner: number | undefined,
  warnings: string[],
  uid = currentUid(),
): { inheritMode: boolean } {
  checkRegular(p, st, 'resolve');
  checkOwner(p, st, env, homeOwner, ref, 'replace', uid);
  const ceiling = fileCeilingFor(ref, env);
  const mode = st.mode & 0o777;
  if (st.nlink > 1) {
    warnings.push(`${p} has ${String(st.nlink)} hard links; its mode ${formatMode(mode)} is not carried over`);
    return { inheritMode: false };
  }
  if ((mode & ~ceiling) !== 0) {
    warnings.push(`${p} had mode ${formatMode(mode)}, wider than ${formatMode(ceiling)}; the new version gets the kind's mode`);
    return { inheritMode: false };
  }
  return { inheritMode: true };
}

/**
 * Use (a file handed to a library that writes into it, e.g. SQLite): a regular file of one of `owners` with one
 * link — checked on a descriptor's fstat — so an owner-only artifact never goes into a file someone else
 * created or linked.
 */
export function verifyForUse(p: string, st: fs.Stats, owners: ReadonlySet<number>): void {
  checkRegular(p, st, 'verify');
  if (!owners.has(st.uid)) {
    throw new FsPolicyError({
      code: 'EFOREIGN_OWNER',
      step: 'verify',
      path: p,
      message: `refusing to use ${p}: it is owned by uid ${String(st.uid)}, not by ${[...owners].map(String).join(' or ')}`,
    });
  }
  if (st.nlink !== 1) {
    throw new FsPolicyError({
      code: 'EHARDLINK',
      step: 'verify',
      path: p,
      message: `refusing to use ${p}: it has ${String(st.nlink)} hard links, so what is written to it is readable under another name`,
    });
  }
}
