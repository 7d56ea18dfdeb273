/**
 * The path check made before root acts on a home (OpenSSH's StrictModes, systemd's safe transitions).
 *
 * Root trusts exactly two owners on the way: root, and the home's owner. Not `HERMES_UID` (the uid created
 * files are given to: an operator account that owns a directory above the home could otherwise point the home
 * at any root-owned directory), not the owner of an explicit `root` or of a target outside the home (whoever
 * owns the directory written into would vouch for the path to it), not anyone else.
 */
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { errnoCode, FsPolicyError, toPolicyError } from '../errors.js';
import { call, type Plan } from './io.js';
import { raceError } from './resolve.js';

interface ChainEntry {
  readonly path: string;
  readonly st: fs.Stats;
  /** The directory the entry sits in (its st), for links. */
  readonly parent: fs.Stats | undefined;
}

/** Every directory and link met from `/` down to a path, links resolved one step at a time. */
interface ChainWalk {
  readonly dirs: readonly ChainEntry[];
  readonly links: readonly ChainEntry[];
  /** False when the walk stopped at a missing component (the deepest existing directory is the last one). */
  readonly complete: boolean;
}

/** What the chain check needs to know about the operation. */
export interface ChainTrust {
  /** HERMES_UID: with it set, the home must belong to root or to that uid (it adds no trust). */
  readonly uid?: number | undefined;
  /** The home, when the checked top may be another directory (an explicit root, an outside target). */
  readonly home?: string | undefined;
}

/**
 * From `/` down to `top`, every directory passed through — links resolved here, one step at a time — must be
 * owned by root or by the home's owner and must not be writable by anyone else (a sticky directory is
 * accepted: others may add entries there but cannot replace ours). A link must sit in such a directory, and
 * in a sticky one it must itself belong to root or the home's owner. The home's owner is the owner of `top`
 * when `top` is the home (`trust.home` undefined or equal), else the owner of `trust.home` when the chain to
 * the home is itself safe; a home that does not exist has no owner (only root is trusted then). The deepest
 * existing directory may be writable by its group, except when the home itself is missing (its parent decides
 * who may create it). With
 * HERMES_UID set, an existing home must belong to root or to that uid (`EFOREIGN_OWNER`). Returns the `lstat`
 * of the deepest existing directory (compared with what is then opened), or throws `EUNSAFE_PATH` naming the
 * directory or link that another uid could change.
 */
export function* chainCheckPlan(top: string, trust: ChainTrust): Plan<fs.Stats> {
  const walk = yield* walkChain(top);
  const last = walk.dirs[walk.dirs.length - 1];
  if (last === undefined) throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: top, message: `${top} does not exist` });
  const isHome = trust.home === undefined || path.resolve(trust.home) === top;
  let owner: number | undefined;
  let ownerNote: string;
  if (isHome) {
    owner = walk.complete ? last.st.uid : undefined;
    ownerNote = owner === undefined ? 'the home does not exist yet, so only root is trusted on the way to it' : `only root and the home's owner (uid ${String(owner)}) are trusted`;
    if (owner !== undefined && trust.uid !== undefined && owner !== 0 && owner !== trust.uid) {
      throw new FsPolicyError({
        code: 'EFOREIGN_OWNER',
        step: 'resolve',
        path: top,
        message: `${top} is owned by uid ${String(owner)}, neither root nor HERMES_UID=${String(trust.uid)}; refusing to act on it as root`,
      });
    }
  } else {
    const home = path.resolve(trust.home ?? top);
    owner = yield* homeOwnerPlan(home);
    ownerNote =
      owner === undefined
        ? `the owner of the home ${home} is not established (missing, or its own path is unsafe), so only root is trusted`
        : `only root and the home's owner (uid ${String(owner)}) are trusted, not the owner of ${top}`;
  }
  // Below the deepest existing directory the resolver walks through descriptors. Only for the home does a missing
  // top make its parent matter (whoever can create the home there would become the owner root trusts); for an
  // explicit root or an outside target the trusted owners do not come from the top, so its deepest existing
  // directory may be group-shared like any directory inside a 2770 home.
  const problem = judge(walk, owner, !isHome);
  if (problem !== undefined) throw unsafe(problem.path, top, problem.owner ? `${problem.why} (${ownerNote})` : problem.why);
  return last.st;
}

/** The owner of `home` when it exists and the chain to it is safe under root and that owner; else undefined. */
function* homeOwnerPlan(home: string): Plan<number | undefined> {
  let walk: ChainWalk;
  try {
    walk = yield* walkChain(home);
  } catch {
    return undefined; // not a directory, a loop, unreadable: no owner to trust (the top's own check reports)
  }
  const last = walk.dirs[walk.dirs.length - 1];
  if (!walk.complete || last === undefined) return undefined;
  return judge(walk, last.st.uid) === undefined ? last.st.uid : undefined;
}

/** The first directory or link on the walk that someone other than root and `owner` could change. */
function judge(walk: ChainWalk, owner: number | undefined, lastMayBeShared = false): { path: string; why: string; owner: boolean } | undefined {
  const trusted = (uid: number): boolean => uid === 0 || uid === owner;
  const last = walk.dirs[walk.dirs.length - 1];
  for (const d of walk.dirs) {
    if (!trusted(d.st.uid)) return { path: d.path, why: `is owned by uid ${String(d.st.uid)}`, owner: true };
    // What is below the home is the resolver's job; a missing home's parent decides what the home becomes.
    if (d === last && (walk.complete || lastMayBeShared)) continue;
    const sticky = (d.st.mode & 0o1000) !== 0;
    if (!sticky && (d.st.mode & 0o022) !== 0) {
      return { path: d.path, why: `is writable by ${(d.st.mode & 0o020) !== 0 ? 'its group' : 'others'} (mode ${(d.st.mode & 0o7777).toString(8).padStart(4, '0')})`, owner: false };
    }
  }
  for (const l of walk.links) {
    const parentSticky = l.parent !== undefined && (l.parent.mode & 0o1000) !== 0;
    if (parentSticky && !trusted(l.st.uid)) return { path: l.path, why: `is a link owned by uid ${String(l.st.uid)} in a sticky directory`, owner: true };
  }
  return undefined;
}

function* walkChain(top: string): Plan<ChainWalk> {
  const dirs: ChainEntry[] = [];
  const links: ChainEntry[] = [];
  let cur = path.parse(top).root;
  let curSt = yield* lstatPath(cur, top);
  if (curSt === undefined) throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: cur, message: `${cur} does not exist` });
  dirs.push({ path: cur, st: curSt, parent: undefined });
  const queue = top.split('/').filter((c) => c !== '');
  let hops = 0;
  let complete = true;
  while (queue.length > 0) {
    const name = queue.shift() ?? '';
    if (name === '.' || name === '') continue;
    if (name === '..') {
      cur = path.dirname(cur);
      const back = [...dirs].reverse().find((d) => d.path === cur);
      curSt = back?.st ?? curSt;
      continue;
    }
    const p = path.join(cur, name);
    const st = yield* lstatPath(p, top);
    if (st === undefined) {
      complete = false;
      break;
    }
    if (st.isSymbolicLink()) {
      if (++hops > 40) throw new FsPolicyError({ code: 'ELOOP', step: 'resolve', path: p, message: `too many levels of symbolic links at ${p}` });
      links.push({ path: p, st, parent: curSt });
      let text: string;
      try {
        text = yield* call('resolve', p, 'readlink', p);
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'EINVAL' || code === 'ENOENT') throw raceError(p); // replaced between lstat and readlink
        throw toPolicyError(err, 'resolve', p, `readlink ${p}`);
      }
      if (path.isAbsolute(text)) cur = path.parse(text).root;
      queue.unshift(...text.split('/'));
      continue;
    }
    if (!st.isDirectory()) {
      throw new FsPolicyError({ code: 'ENOTDIR', step: 'resolve', path: p, message: `${p} is not a directory` });
    }
    dirs.push({ path: p, st, parent: curSt });
    cur = p;
    curSt = st;
  }
  return { dirs, links, complete };
}

function unsafe(p: string, top: string, why: string): FsPolicyError {
  return new FsPolicyError({
    code: 'EUNSAFE_PATH',
    step: 'resolve',
    path: p,
    message: `refusing to act on ${top} as root: ${p} ${why}, so another uid could redirect the path`,
  });
}

function* lstatPath(p: string, top: string): Plan<fs.Stats | undefined> {
  try {
    return yield* call('resolve', p, 'lstat', p);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw toPolicyError(err, 'resolve', p, `lstat ${p} (on the way to ${top})`);
  }
}
