/**
 * One gateway per home: a lock with liveness. The lock is the directory `<home>/gateway.lock/` holding one
 * file whose name records its holder (pid, start time, pid namespace, boot id, machine id, hostname,
 * acquired-at; the same as JSON inside it, for people). Every decision reads only the name, so a uid that
 * cannot read another uid's 0600 file can still judge it.
 *
 * - **Acquire**: a private directory `.gateway.lock.<random>.new` is created (fs-policy, the home's kind) with the
 *   holder file in it, complete and fsynced, then renamed onto `gateway.lock`. rename(2) of a directory onto
 *   an existing one succeeds only while that one is **empty** — so of two racers exactly one publishes, and a
 *   held lock (never empty) is never replaced.
 * - **Take-over**: a lock whose holder is provably dead (@hermes/fs-policy's `processLiveness`) is freed by
 *   unlinking that holder's file — by its unique name, so a fresh lock another process published meanwhile
 *   (a different name) cannot be removed — and the acquire is tried again. A live holder, stopped or not, or
 *   one that cannot be checked from here (another pid namespace, another host, no `/proc`) is refused:
 *   {@link GatewayLockError} `ELOCKED`.
 * - **Release**: the holder's file is unlinked (at the last release of a re-entrant lock, and on `'exit'`).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  atomicWriteSync,
  FsPolicyError,
  type HeldDirectory,
  type HermesEnvironment,
  hintFor,
  holdDirectorySync,
  type Liveness,
  processLiveness,
  type ProcessIdentity,
  secureMkdirSync,
  selfIdentity,
} from '@hermes/fs-policy';
import { type GatewayLogger, loggerFor } from './log.js';
import { type SpoolLocationOptions, spoolLocation } from './spool.js';

/** The lock's name in the home. */
export const GATEWAY_LOCK_NAME = 'gateway.lock';
/** The fs-policy kind the lock directory and its file are created with (the home's own). */
const LOCK_KIND = 'home';
const HOLDER = /^holder\.(\d+)\.(\d+|x)\.(\d+|x)\.([0-9a-f]{32}|x)\.([0-9a-f]{32}|x)\.([A-Za-z0-9_-]*)\.(\d+)\.[0-9a-f]{8}$/;
const STAGING = /^\.gateway\.lock\.[0-9a-f]{16}\.new$/;

/** The process that holds (or held) a gateway lock. */
export interface GatewayLockHolder extends ProcessIdentity {
  /** When it took the lock, epoch milliseconds. */
  readonly acquiredAt: number;
}

export interface GatewayLock {
  /** `<home>/gateway.lock`. */
  readonly path: string;
  readonly holder: GatewayLockHolder;
  /** Gives up this hold; the lock is released at the last one (re-entrant within a process). Idempotent. */
  release(): void;
}

export interface AcquireGatewayLockOptions extends SpoolLocationOptions {
  /** Wait up to this long (ms) for a live holder to release; default 0: refuse at once. */
  waitMs?: number;
  logger?: GatewayLogger;
}

/**
 * The home is locked by a process that is alive or cannot be proven dead (`ELOCKED`), or the lock cannot be
 * used at all (`ELOCK_INVALID`: something that is no lock of this package sits at its name; an fs errno).
 */
export class GatewayLockError extends Error {
  override readonly name = 'GatewayLockError';
  readonly code: string;
  readonly path: string;
  /** The holder, when the lock names one. */
  readonly holder: GatewayLockHolder | null;
  /** Why the holder was not taken for dead (`ELOCKED`). */
  readonly liveness: Liveness | null;
  readonly hint: string;

  constructor(init: { code: string; path: string; message: string; hint: string; holder?: GatewayLockHolder | null; liveness?: Liveness | null; cause?: unknown }) {
    super(`${init.message} [${init.code}: ${init.path}]`, { cause: init.cause });
    this.code = init.code;
    this.path = init.path;
    this.holder = init.holder ?? null;
    this.liveness = init.liveness ?? null;
    this.hint = init.hint;
  }
}

/** `pid 4242 on host gw-1, started at tick 123456, holding the lock since 2024-…`. */
export function describeHolder(h: GatewayLockHolder): string {
  return `pid ${String(h.pid)} on host ${h.hostname}${h.startTicks === null ? '' : `, started at tick ${String(h.startTicks)}`}, holding it since ${new Date(h.acquiredAt).toISOString()}`;
}

function holderName(h: GatewayLockHolder): string {
  const x = (v: string | number | null): string => (v === null ? 'x' : String(v));
  const host = Buffer.from(h.hostname, 'utf8').subarray(0, 64).toString('base64url');
  return `holder.${String(h.pid)}.${x(h.startTicks)}.${x(h.pidns)}.${x(h.bootId)}.${x(h.machineId)}.${host}.${String(h.acquiredAt)}.${randomBytes(4).toString('hex')}`;
}

/** The holder a lock file's name records; undefined for any other name. */
export function parseHolderName(name: string): GatewayLockHolder | undefined {
  const m = HOLDER.exec(name);
  if (m === null) return undefined;
  const v = (s: string | undefined): string | null => (s === undefined || s === 'x' ? null : s);
  const ticks = v(m[2]);
  return {
    pid: Number(m[1]),
    startTicks: ticks === null ? null : Number(ticks),
    pidns: v(m[3]),
    bootId: v(m[4]),
    machineId: v(m[5]),
    hostname: Buffer.from(m[6] ?? '', 'base64url').toString('utf8'),
    acquiredAt: Number(m[7]),
  };
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(1, ms));
}

interface Held {
  users: number;
  readonly lock: GatewayLock;
  readonly home: string;
  readonly file: string;
  readonly logger: GatewayLogger;
}

/** Locks this process holds, by resolved lock path. */
const holds = new Map<string, Held>();
let exitListener = false;

function releaseAll(): void {
  for (const h of [...holds.values()]) {
    h.users = 1;
    h.lock.release();
  }
}

/** Runs `fn` with the directory held; undefined when it does not exist. */
function withHeld<T>(dir: string, env: HermesEnvironment, fn: (d: HeldDirectory) => T): T | undefined {
  let d: HeldDirectory;
  try {
    d = holdDirectorySync(dir, { env });
  } catch (err) {
    if (err instanceof FsPolicyError && err.code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return fn(d);
  } finally {
    d.close();
  }
}

function removeStaging(home: string, env: HermesEnvironment, staging: string, file: string): void {
  withHeld(path.join(home, staging), env, (d) => {
    try {
      fs.unlinkSync(d.at(file));
    } catch (err) {
      if (codeOf(err) !== 'ENOENT') throw err;
    }
  });
  withHeld(home, env, (d) => {
    try {
      fs.rmdirSync(d.at(staging));
    } catch (err) {
      if (codeOf(err) !== 'ENOENT') throw err;
    }
  });
}

/** Staging directories of acquirers that died before publishing them: removed when provably dead. */
function reapStaging(home: string, env: HermesEnvironment, logger: GatewayLogger): void {
  try {
    const names = withHeld(home, env, (d) => fs.readdirSync(d.self)) ?? [];
    for (const staging of names.filter((n) => STAGING.test(n))) {
      const inside = withHeld(path.join(home, staging), env, (d) => fs.readdirSync(d.self)) ?? [];
      const file = inside.length === 1 ? inside[0] : undefined;
      const holder = file === undefined ? undefined : parseHolderName(file);
      if (file === undefined || holder === undefined || processLiveness(holder).state !== 'dead') continue;
      removeStaging(home, env, staging, file);
    }
  } catch (err) {
    logger.warn(`gateway lock: cannot remove an abandoned staging directory in ${home}: ${codeOf(err)} (${(err as Error).message})`, { path: home, code: codeOf(err) });
  }
}

/**
 * Takes the home's gateway lock for this process, or throws {@link GatewayLockError}: `ELOCKED` when another
 * process holds it and is alive (stopped included) or cannot be proven dead from here (another pid namespace,
 * another host, an unreadable `/proc`), naming the holder and the fix; the fs error of a lock that cannot be
 * used otherwise. A lock whose holder is provably dead (its pid gone, exited or recycled, in this boot and pid
 * namespace) is taken over; of processes racing for a free or stale lock exactly one wins. Re-entrant within
 * the process: each call returns a handle, and the lock is released when every handle is released, or when
 * the process exits. A killed holder leaves its lock, which the next start proves dead and takes over.
 */
export function acquireGatewayLock(options: AcquireGatewayLockOptions = {}): GatewayLock {
  const loc = spoolLocation(options);
  try {
    return acquire(loc.home, loc.env, options);
  } catch (err) {
    if (err instanceof GatewayLockError) throw err;
    const code = codeOf(err);
    const at = err instanceof FsPolicyError ? err.path : path.join(loc.home, GATEWAY_LOCK_NAME);
    const uid = typeof process.geteuid === 'function' ? process.geteuid() : -1;
    const gid = typeof process.getegid === 'function' ? process.getegid() : -1;
    throw new GatewayLockError({
      code,
      path: at,
      message: `cannot take the gateway lock of ${loc.home}: ${err instanceof Error ? err.message : String(err)}`,
      hint: err instanceof FsPolicyError ? err.hint : hintFor(code, at, uid, gid),
      cause: err,
    });
  }
}

function acquire(home: string, env: HermesEnvironment, options: AcquireGatewayLockOptions): GatewayLock {
  const lockPath = path.join(home, GATEWAY_LOCK_NAME);
  const logger = loggerFor(options.logger);
  const mine = holds.get(lockPath);
  if (mine !== undefined) {
    mine.users++;
    return handleFor(mine);
  }
  const holder: GatewayLockHolder = { ...selfIdentity(), acquiredAt: Date.now() };
  const file = holderName(holder);
  const staging = `.gateway.lock.${randomBytes(8).toString('hex')}.new`;
  const stagingPath = path.join(home, staging);
  secureMkdirSync(stagingPath, LOCK_KIND, { env });
  let published = false;
  try {
    atomicWriteSync(path.join(stagingPath, file), `${JSON.stringify(holder, null, 2)}\n`, { kind: LOCK_KIND, env, durable: 'file', createParents: false, overwrite: false });
    const deadline = Date.now() + Math.max(0, options.waitMs ?? 0);
    for (let attempt = 0; ; attempt++) {
      const refusal = tryPublish(home, env, staging, lockPath, logger);
      if (refusal === undefined) {
        published = true;
        break;
      }
      if (refusal === 'retry' && attempt < 1000) continue;
      if (refusal !== 'retry' && Date.now() < deadline) {
        sleepSync(Math.min(50, deadline - Date.now()));
        continue;
      }
      if (refusal === 'retry') throw new GatewayLockError({ code: 'ELOCK_INVALID', path: lockPath, message: `${lockPath} changed under every one of 1,000 attempts to take it`, hint: 'another process keeps replacing it; find it (lsof, fuser) and stop it.' });
      throw refusal;
    }
  } finally {
    if (!published) removeStaging(home, env, staging, file);
  }
  const entry: Held = {
    users: 1,
    home,
    file,
    logger,
    lock: {
      path: lockPath,
      holder,
      release: () => {
        releaseOne(lockPath, entry, env);
      },
    },
  };
  holds.set(lockPath, entry);
  if (!exitListener) {
    exitListener = true;
    process.on('exit', releaseAll);
  }
  reapStaging(home, env, logger);
  return handleFor(entry);
}

function handleFor(entry: Held): GatewayLock {
  let released = false;
  return {
    path: entry.lock.path,
    holder: entry.lock.holder,
    release: () => {
      if (released) return;
      released = true;
      entry.lock.release();
    },
  };
}

function releaseOne(lockPath: string, entry: Held, env: HermesEnvironment): void {
  entry.users--;
  if (entry.users > 0 || holds.get(lockPath) !== entry) return;
  holds.delete(lockPath);
  try {
    const gone = withHeld(lockPath, env, (d) => {
      try {
        fs.unlinkSync(d.at(entry.file));
        return false;
      } catch (err) {
        if (codeOf(err) === 'ENOENT') return true;
        throw err;
      }
    });
    if (gone !== false) {
      entry.logger.warn(`gateway lock: ${lockPath} no longer named this process when it released it; another process removed it`, { path: lockPath });
      return;
    }
    withHeld(entry.home, env, (d) => {
      try {
        fs.rmdirSync(d.at(GATEWAY_LOCK_NAME));
      } catch {
        // taken by another process meanwhile (not empty), or already gone: either is right
      }
    });
  } catch (err) {
    entry.logger.error(`gateway lock: cannot release ${lockPath}: ${codeOf(err)} (${(err as Error).message})`, {
      path: lockPath,
      code: codeOf(err),
      hint: `the next start finds pid ${String(process.pid)} dead and takes the lock over; or remove ${path.join(lockPath, entry.file)}.`,
    });
  }
}

/**
 * One attempt: publish the staging directory as the lock. Undefined: published. `retry`: the lock changed
 * (freed, or a dead holder's file removed now). A GatewayLockError: a live or unprovable holder, or a lock
 * that is not one of ours.
 */
function tryPublish(home: string, env: HermesEnvironment, staging: string, lockPath: string, logger: GatewayLogger): undefined | 'retry' | GatewayLockError {
  try {
    withHeld(home, env, (d) => {
      fs.renameSync(d.at(staging), d.at(GATEWAY_LOCK_NAME));
    });
    return undefined;
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ENOTDIR') {
      return new GatewayLockError({ code: 'ELOCK_INVALID', path: lockPath, message: `${lockPath} is not a directory, so it is no lock of this package`, hint: `make sure no gateway runs with this home, then remove ${lockPath}.`, cause: err });
    }
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
  }
  const names = withHeld(lockPath, env, (d) => fs.readdirSync(d.self));
  if (names === undefined || names.length === 0) return 'retry'; // released meanwhile
  const holders = names.map((n) => ({ name: n, holder: parseHolderName(n) }));
  const stranger = holders.find((h) => h.holder === undefined);
  if (stranger !== undefined) {
    return new GatewayLockError({ code: 'ELOCK_INVALID', path: lockPath, message: `${lockPath} holds ${JSON.stringify(stranger.name)}, which names no holder`, hint: `make sure no gateway runs with this home, then remove ${lockPath}.` });
  }
  for (const { name, holder } of holders) {
    if (holder === undefined) continue;
    const verdict = processLiveness(holder);
    if (verdict.state !== 'dead') {
      const proven = verdict.state === 'alive';
      return new GatewayLockError({
        code: 'ELOCKED',
        path: lockPath,
        holder,
        liveness: verdict,
        message: `another gateway holds ${lockPath}: ${describeHolder(holder)}; ${verdict.reason}`,
        hint: proven
          ? `stop that process first (kill ${String(holder.pid)}), or use another home.`
          : `the holder cannot be checked from here: make sure no gateway runs with this home (on host ${holder.hostname}), then remove ${path.join(lockPath, name)}.`,
      });
    }
    const removed = withHeld(lockPath, env, (d) => {
      try {
        fs.unlinkSync(d.at(name));
        return true;
      } catch (err) {
        if (codeOf(err) === 'ENOENT') return false; // another process took it over first
        throw err;
      }
    });
    if (removed === true) logger.info(`gateway lock: took over ${lockPath} from a dead holder (${describeHolder(holder)}): ${verdict.reason}`, { path: lockPath });
  }
  return 'retry';
}

/** The lock for a recovery pass: a handle, or the refusal (never thrown). */
export function lockForPass(loc: { home: string; env: HermesEnvironment }, options: { lockWaitMs?: number }, logger: GatewayLogger): GatewayLock | GatewayLockError {
  try {
    return acquireGatewayLock({ home: loc.home, env: loc.env, logger, ...(options.lockWaitMs === undefined ? {} : { waitMs: options.lockWaitMs }) });
  } catch (err) {
    if (err instanceof GatewayLockError) return err;
    return new GatewayLockError({ code: codeOf(err), path: path.join(loc.home, GATEWAY_LOCK_NAME), message: err instanceof Error ? err.message : String(err), hint: 'see the message', cause: err });
  }
}

/** The holder of the home's lock as its name records it (null when it is free); read-only, never judged. */
export function gatewayLockHolder(options: SpoolLocationOptions = {}): GatewayLockHolder | null {
  const loc = spoolLocation(options);
  const names = withHeld(path.join(loc.home, GATEWAY_LOCK_NAME), loc.env, (d) => fs.readdirSync(d.self)) ?? [];
  for (const n of names) {
    const h = parseHolderName(n);
    if (h !== undefined) return h;
  }
  return null;
}
