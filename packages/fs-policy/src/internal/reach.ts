/**
 * Reaching a directory for a primitive: choose the root, check the path to it when privileged, open it,
 * create what is missing, and walk below it through descriptors.
 */
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { currentUid, FsPolicyError } from '../errors.js';
import type { HermesEnvironment } from '../env.js';
import { dirModeFor, getKind, type KindRef } from '../registry.js';
import { call, type Plan } from './io.js';
import { anchorMode, selfFd } from './anchor.js';
import { anchorAt, asRoot, checkRawPath, componentsBelow, type CreateSpec, type DirRef, type Held, lazyRoot, materialize, realOf, type RootRef, statOf, tryOpenBelow, walkPlan } from './resolve.js';
import { isInside } from './steps.js';
import { chainCheckPlan, type ChainTrust } from './chain.js';
import { type Intent, refuseUnsafeFallback, sharedDirReason, sharedHomeReason } from './fallback.js';

export { chainCheckPlan, type ChainTrust } from './chain.js';

export interface Reached {
  /** The root links must stay inside (the home, the explicit root, or the anchor of an outside target). */
  readonly root: RootRef;
  /** True when the target lies inside the home or the explicit root (false: an outside target's anchor). */
  readonly contained: boolean;
  /** Every directory from the root down to the one reached (bottom first). */
  readonly stack: readonly DirRef[];
  /** The directory reached. */
  readonly dir: DirRef;
  /** Levels created by this call, outermost first. */
  readonly created: readonly string[];
  readonly warnings: readonly string[];
  /**
   * The effective uid this operation acts as, read once when the directory was reached: every owner check of
   * the operation uses it (no second `geteuid` per check, and one identity for the whole call).
   */
  readonly uid: number;
}

export interface ReachOptions {
  readonly env: HermesEnvironment;
  /** The containment root for targets inside it (default: the home). */
  readonly root?: string | undefined;
  /** Create missing levels with this kind's directory mode; undefined: everything must exist. */
  readonly createFor?: KindRef | undefined;
  /**
   * What the operation does below the directory reached (default `write`: create, write, rename, unlink,
   * chmod, chown). Decides, in fallback mode, whether a shared home is refused.
   */
  readonly intent?: Intent | undefined;
}

/**
 * Homes whose chain was found safe, by home path and HERMES_UID, with the identity and owner of the home then
 * opened. The verdict trusted root and that owner; only they can change a directory on a safe chain, so it
 * holds while the home opened is the same directory with the same owner — anything else is checked again.
 * Only chains whose top is the home itself are remembered: for an explicit root or an outside target the
 * trusted owner is the home's, which the top's identity does not pin, so those are checked every time.
 */
const verifiedChains = new Map<string, { dev: number; ino: number; uid: number }>();

function rememberChain(key: string, st: fs.Stats): void {
  if (verifiedChains.size >= 256) verifiedChains.clear();
  verifiedChains.set(key, { dev: st.dev, ino: st.ino, uid: st.uid });
}

/** How often the chain check is made again when the path changed between the check and the open. */
const MAX_CHAIN_RETRIES = 3;

function sameInode(a: { dev: number; ino: number; uid?: number } | undefined, b: fs.Stats): boolean {
  return a?.dev === b.dev && a.ino === b.ino && (a.uid === undefined || a.uid === b.uid);
}

/** True when this process may act for others (root): the path to the home must then be one others cannot redirect. */
export function isPrivileged(): boolean {
  return currentUid() === 0;
}

/** The boundary links must stay inside for `target`, or undefined when it lies outside the home and the root. */
export function boundaryFor(target: string, env: HermesEnvironment, root: string | undefined): string | undefined {
  return scopeFor(target, env, root).containment;
}

interface Scope {
  /**
   * The directory reached by path — the part above it is the operator's (checked as a chain when privileged):
   * the outermost of the home and the explicit root that contain the target, else the target itself.
   */
  readonly trustTop: string;
  /** Links must stay inside this (the innermost of the two), or undefined for a target outside both. */
  readonly containment: string | undefined;
}

function scopeFor(target: string, env: HermesEnvironment, root: string | undefined): Scope {
  if (root === undefined) {
    // The common case (no explicit root), without building and sorting a list: the home, or nothing.
    return isInside(target, env.home) ? { trustTop: env.home, containment: env.home } : { trustTop: target, containment: undefined };
  }
  const around = [env.home, path.resolve(root)].filter((r) => isInside(target, r));
  if (around.length === 0) return { trustTop: target, containment: undefined };
  const sorted = [...around].sort((a, b) => a.length - b.length);
  return { trustTop: sorted[0] ?? target, containment: sorted[sorted.length - 1] };
}

/**
 * Reaches the directory `dir` (absolute or relative to the cwd). The home (or the explicit root, or for a
 * target outside both, the target's deepest existing ancestor) is opened by path — and, when privileged, only
 * after the chain check — and everything below it is walked through descriptors. Descriptors go to `held`.
 *
 * This is the gate of every primitive that acts in a home: in fallback mode (no descriptors) it refuses a
 * privileged actor, and a write into a shared home, with `EUNSAFE_FALLBACK` before anything is opened (see
 * `fallback.ts`); the opt-in of the environment is the only way past.
 */
export function* reachDirPlan(dir: string, options: ReachOptions, held: Held): Plan<Reached> {
  checkRawPath(dir);
  const env = options.env;
  const target = path.resolve(dir);
  const intent = options.intent ?? 'write';
  refuseUnsafeFallback({ path: target, intent, env });
  held.admitPathFallback();
  const { trustTop, containment } = scopeFor(target, env, options.root);
  if (containment !== undefined && trustTop === path.parse(trustTop).root) {
    throw new FsPolicyError({
      code: 'EDANGEROUS_HOME',
      step: 'resolve',
      path: trustTop,
      message: `refusing to use ${trustTop} as ${trustTop === env.home ? 'the Hermes home' : 'a root'}: it is the filesystem root`,
    });
  }
  const warnings: string[] = [];
  const created: string[] = [];
  const walkSpec = createSpecFor(options, env, warnings, created);
  const toContainment = containment === undefined ? [] : componentsBelow(trustTop, containment);
  const below = containment === undefined ? [] : componentsBelow(containment, target);
  const uid = currentUid();
  const privileged = uid === 0;

  // Stage 1: the trusted top, opened by path.
  let top: RootRef;
  let stack: DirRef[];
  const firstBelow = toContainment[0] ?? below[0];
  if (!privileged && containment !== undefined && firstBelow !== undefined && anchorMode() === 'procfd') {
    // The common case, one open shorter: the first level below the top opened as `<top>/<first>` without
    // following a link there — the same lookup as opening the top and then the level relative to it. Any
    // failure takes the long way below, which reports it properly.
    const first = yield* tryOpenBelow(trustTop, firstBelow, held);
    if (first !== undefined) {
      top = lazyRoot(trustTop);
      stack = [top, first];
      return yield* finish(top, stack, 1);
    }
  }
  const trust: ChainTrust = { uid: env.uid, home: env.home };
  const chainKey = trustTop === env.home ? `${trustTop}\0${String(env.uid)}` : undefined;
  const cached = privileged && chainKey !== undefined ? verifiedChains.get(chainKey) : undefined;
  const chain = privileged && cached === undefined ? yield* chainCheckPlan(trustTop, trust) : undefined;
  let { anchor, missing } = yield* anchorAt(trustTop, held);
  if (privileged) {
    let want: { dev: number; ino: number; uid?: number } | undefined = chain ?? cached;
    let opened = yield* statOf(anchor, held);
    // What was opened must be what the check ended on. When it is not, the path changed since it was checked (a
    // cached verdict gone stale, or a home another process created between the check and the open): check again,
    // and reopen what the path leads to now — a few times, then give up (ERACE).
    for (let attempt = 0; !sameInode(want, opened); attempt++) {
      if (attempt >= MAX_CHAIN_RETRIES) {
        throw new FsPolicyError({ code: 'ERACE', step: 'resolve', path: anchor.path, message: `${anchor.path} changed between the ownership check and its use` });
      }
      want = yield* chainCheckPlan(trustTop, trust);
      if (sameInode(want, opened)) break;
      yield* held.releaseOne(anchor);
      ({ anchor, missing } = yield* anchorAt(trustTop, held));
      opened = yield* statOf(anchor, held);
    }
    if (chainKey !== undefined && missing.length === 0) rememberChain(chainKey, opened);
  }
  if (intent === 'write' && anchorMode() === 'fallback') {
    // Tree evidence, whatever the environment says: a top others can write is shared.
    refuseUnsafeFallback({ path: target, intent, env, shared: sharedDirReason(anchor.path, yield* statOf(anchor, held)) });
  }
  top = anchor;
  stack = [anchor];
  if (missing.length > 0) {
    if (walkSpec === undefined) {
      throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: trustTop, message: `${trustTop} does not exist` });
    }
    if (trustTop === env.home) refuseToInventHome(env.home, env);
    // Levels that do not exist yet down to the root: created here through descriptors; a link that appears
    // among them must stay inside the existing directory they are created in, and a dangling one is refused.
    stack = yield* walkPlan(anchor, stack, missing, walkSpec, held);
    top = asRoot(stack[stack.length - 1] ?? anchor);
    stack = [top];
  }
  return yield* finish(top, stack, 0);

  /** Stages 2 and 3: down to the containment root (links inside the top), then to the target (links inside it). */
  function* finish(topRef: RootRef, start: DirRef[], done: number): Plan<Reached> {
    const spec = walkSpec ?? {};
    let walked = yield* walkPlan(topRef, start, toContainment.slice(done), spec, held);
    let root = topRef;
    if (toContainment.length > 0) {
      root = asRoot(walked[walked.length - 1] ?? topRef);
      walked = [root];
    }
    walked = yield* walkPlan(root, walked, below.slice(Math.max(0, done - toContainment.length)), spec, held);
    return { root, contained: containment !== undefined, stack: walked, dir: walked[walked.length - 1] ?? root, created, warnings, uid };
  }
}

/**
 * Whether others may rename entries in this home (a managed 2770 home, or a HERMES_HOME_MODE with group/other
 * write): only then can a directory already reached be moved out of it by someone else.
 */
function sharedHome(env: HermesEnvironment): boolean {
  return sharedHomeReason(env) !== undefined;
}

/**
 * Where a reached directory is now, when someone moved it out of the root after it was reached (a member of the
 * service group can rename a 2770 directory into a place of their own); undefined while it is still inside.
 * Checked at commit points: a descriptor keeps naming the directory wherever it goes, so the walk alone
 * cannot promise that what is created through it stays in the home.
 */
export function* movedOut(reached: Reached, dir: DirRef, env: HermesEnvironment, held: Held): Plan<string | undefined> {
  const watch = yield* watchedRoot(reached, env, held);
  if (watch === undefined) return undefined;
  const now = yield* call('resolve', dir.path, 'readlink', selfFd(dir.fd, dir.path));
  return isInside(now, watch) ? undefined : now;
}

/** The root's real path when moves out of it must be watched for (see {@link movedOut}), else undefined. */
export function* watchedRoot(reached: Reached, env: HermesEnvironment, held: Held): Plan<string | undefined> {
  if (!reached.contained || anchorMode() !== 'procfd' || !sharedHome(env)) return undefined;
  const root = reached.root;
  root.real ??= yield* realOf(yield* materialize(root, held));
  return root.real;
}

/** The typed error for a directory moved out of the root during an operation. */
export function movedOutError(dir: DirRef, now: string, what: string): FsPolicyError {
  return new FsPolicyError({
    code: 'ERACE',
    step: 'resolve',
    path: dir.path,
    message: `${dir.path} was moved out of the home (to ${now}) by another process during the ${what}; ${what === 'append' ? 'the record may have reached it there' : 'nothing was left there'}`,
  });
}

/** The walk spec for levels below the root (undefined kind: nothing is created). */
function createSpecFor(options: ReachOptions, env: HermesEnvironment, warnings: string[], created: string[]): { create: CreateSpec } | undefined {
  if (options.createFor === undefined) return undefined;
  const kind = getKind(options.createFor);
  return { create: { mode: dirModeFor(kind, env), ownership: kind.ownership, env, warnings, created } };
}

/**
 * The home itself is never invented where its absence means something: a managed home is created by the
 * package manager, and a missing named profile was deleted (or never created) on purpose.
 */
export function refuseToInventHome(home: string, env: HermesEnvironment): void {
  if (env.managed.managed) {
    throw new FsPolicyError({
      code: 'EMANAGED_MISSING',
      step: 'mkdir',
      path: home,
      message: `Required directory does not exist: ${home} (managed install: the package manager creates the home)`,
    });
  }
  if (path.basename(path.dirname(home)) === 'profiles') {
    throw new FsPolicyError({
      code: 'EPROFILE_MISSING',
      step: 'mkdir',
      path: home,
      message: `Named profile home does not exist: ${home}; refusing to recreate it`,
    });
  }
}
