/**
 * Whether a home is a managed install, and how far the `.managed` marker may be believed.
 *
 * On a managed install the home is group-writable (`2770`): every member of the service group can replace
 * any entry in it, the marker included. A marker is therefore evidence only when someone a member cannot
 * impersonate wrote it: a regular file with one link, owned by root or the home's owner, writable by nobody
 * else. Anything else under the name is reported and ignored. A home this process cannot search is neither
 * "marked" nor "unmarked": its state is unknown, and the warning says why.
 */
import * as path from 'node:path';
import type { EnvSource } from './env.js';
import { errnoCode } from './errors.js';
import { atFd } from './internal/anchor.js';
import { call, O, type Plan, runSync } from './internal/io.js';
import { dirFlags } from './internal/resolve.js';
import { getLogger } from './logger.js';
import { formatMode, MANAGED_INSTALL } from './registry.js';

/**
 * Where the managed decision came from: `env` (HERMES_MANAGED), `marker` (a trusted `.managed`), `none` (no
 * trusted word: not managed), `unknown` (the marker could not be looked up; treated as not managed).
 */
export type ManagedSource = 'env' | 'marker' | 'none' | 'unknown';

/**
 * What was found under `<home>/.managed`: `trusted` (it decided), `absent`, `untrusted` (something a member
 * of the group could have written: ignored), `unknown` (this process cannot look it up or read it), or
 * `unread` (HERMES_MANAGED decided; the marker was not looked at).
 */
export type MarkerState = 'trusted' | 'absent' | 'untrusted' | 'unknown' | 'unread';

export interface ManagedInfo {
  /** True when a package manager owns the home (group-shared directories, no chmod by the runtime). */
  readonly managed: boolean;
  /** The manager's name (`nixos`, `home-manager`, any other value verbatim), or null when not managed. */
  readonly system: string | null;
  readonly source: ManagedSource;
  /** The raw value that decided (env value or a trusted marker's content), or null. */
  readonly raw: string | null;
  /** What the marker was. Always set by {@link detectManaged}; optional for values built by hand. */
  readonly marker?: MarkerState;
  /** Why the marker was not believed (untrusted or unknown), with the fix; empty otherwise. */
  readonly warnings?: readonly string[];
}

/** The result of {@link inspectManagedMarker}. */
export interface ManagedMarker {
  readonly state: Exclude<MarkerState, 'unread'>;
  /** `<home>/.managed`. */
  readonly path: string;
  /** The content of a trusted marker (at most 4 KiB); null otherwise: an untrusted marker is never read. */
  readonly content: string | null;
  /** Owner and mode of what was found (null when nothing could be seen). */
  readonly uid: number | null;
  readonly mode: number | null;
  /** The home's owner, from the held home descriptor (null when the home could not be opened). */
  readonly homeUid: number | null;
  /**
   * Why it is untrusted or unknown: an errno (`EACCES`, `EIO`, …) or `ESYMLINK`, `ENOTREGULAR`,
   * `EFOREIGN_OWNER`, `EWRITABLE`, `EHARDLINK`, `ETOO_LARGE`; null when trusted or absent.
   */
  readonly code: string | null;
  /** One sentence: what is wrong and what was decided (null when trusted or absent). */
  readonly reason: string | null;
  /** What to do about it (null when trusted or absent). */
  readonly fix: string | null;
}

const MAX_MARKER_BYTES = 4096;

const NOT_MANAGED = new Set(['brew', 'homebrew', 'false', '0', 'no', 'off']);
const MANAGED_BY_NIXOS = new Set(['', 'true', '1', 'yes', 'on']);

/** Applies the one managed vocabulary to a value (from the env or the marker). */
export function interpretManagedValue(value: string): { managed: boolean; system: string | null } {
  const v = value.replace(/^\uFEFF/, '').trim().toLowerCase();
  if (NOT_MANAGED.has(v)) return { managed: false, system: null };
  if (MANAGED_BY_NIXOS.has(v)) return { managed: true, system: 'nixos' };
  return { managed: true, system: v };
}

interface Seen {
  readonly uid: number;
  readonly mode: number;
  readonly nlink: number;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

function result(marker: string, state: ManagedMarker['state'], fields: Partial<Omit<ManagedMarker, 'state' | 'path'>> = {}): ManagedMarker {
  return { state, path: marker, content: null, uid: null, mode: null, homeUid: null, code: null, reason: null, fix: null, ...fields };
}

function untrustedFix(marker: string): string {
  return (
    `if the home is managed, have root or the home's owner recreate the marker (mode ${formatMode(MANAGED_INSTALL.marker.mode)}, ` +
    `e.g. hermes-fs provision tmpfiles and systemd-tmpfiles --create) or set HERMES_MANAGED; otherwise remove it: rm ${marker}`
  );
}

/** Why `st` is not evidence, or null when it is: regular, one link, owned by root or the home's owner, no group/other write. */
function distrust(st: Seen, homeUid: number): { code: string; why: string } | null {
  if (st.isSymbolicLink()) return { code: 'ESYMLINK', why: 'is a symbolic link' };
  if (!st.isFile()) return { code: 'ENOTREGULAR', why: 'is not a regular file (a FIFO, socket or device)' };
  if (st.uid !== 0 && st.uid !== homeUid) return { code: 'EFOREIGN_OWNER', why: `is owned by uid ${String(st.uid)}, not by root or the home's owner (uid ${String(homeUid)})` };
  if ((st.mode & 0o022) !== 0) return { code: 'EWRITABLE', why: `is writable by group or others (mode ${formatMode(st.mode)})` };
  if (st.nlink !== 1) return { code: 'EHARDLINK', why: `has ${String(st.nlink)} hard links (another name shares it)` };
  return null;
}

function untrusted(marker: string, st: Seen, homeUid: number, d: { code: string; why: string }): ManagedMarker {
  return result(marker, 'untrusted', {
    uid: st.uid,
    mode: st.mode & 0o7777,
    homeUid,
    code: d.code,
    reason: `${marker} ${d.why}: a member of the service group could have written it, so it is ignored (the home is not taken as managed on its word)`,
    fix: untrustedFix(marker),
  });
}

function unknown(marker: string, code: string, what: string, homeUid: number | null, seen?: Seen): ManagedMarker {
  return result(marker, 'unknown', {
    uid: seen?.uid ?? null,
    mode: seen === undefined ? null : seen.mode & 0o7777,
    homeUid,
    code,
    reason:
      `managed state unknown: ${what} (${code}); treated as not managed. A process that cannot search its home ` +
      `cannot create, write or chmod anything in it either, so this decision changes nothing there`,
    fix: 'run as the home\'s owner or a member of its group (the home needs search permission for them), or set HERMES_MANAGED in the environment',
  });
}

function* inspectPlan(home: string): Plan<ManagedMarker> {
  const name = MANAGED_INSTALL.marker.name;
  const marker = path.join(home, name);
  let homeFd: number;
  try {
    // The home itself is reached by path (the operator's part, as for every primitive); the marker is looked
    // up relative to this descriptor, so the owner compared below is the owner of the directory it sits in.
    homeFd = yield* call('resolve', home, 'open', home, dirFlags(), 0);
  } catch (err) {
    const code = errnoCode(err) ?? 'EUNKNOWN';
    if (code === 'ENOENT' || code === 'ENOTDIR') return result(marker, 'absent');
    return unknown(marker, code, `cannot open the home ${home}`, null);
  }
  try {
    const homeUid = (yield* call('resolve', home, 'fstat', homeFd)).uid;
    const at = atFd(homeFd, home, name);
    let fd: number;
    try {
      // O_NOFOLLOW: a link is not followed; O_NONBLOCK: a FIFO does not wait for a writer.
      fd = yield* call('open', marker, 'open', at, O.RDONLY | O.NONBLOCK | O.NOFOLLOW, 0);
    } catch (err) {
      const code = errnoCode(err) ?? 'EUNKNOWN';
      if (code === 'ENOENT' || code === 'ENOTDIR') return result(marker, 'absent');
      let st: Seen;
      try {
        st = yield* call('lstat', marker, 'lstat', at);
      } catch (lerr) {
        const lcode = errnoCode(lerr) ?? 'EUNKNOWN';
        if (lcode === 'ENOENT') return result(marker, 'absent');
        return unknown(marker, lcode, lcode === 'EACCES' ? `cannot search the home ${home} to look up ${name}` : `cannot look up ${marker}`, homeUid);
      }
      const d = distrust(st, homeUid) ?? (code === 'ELOOP' ? { code: 'ESYMLINK', why: 'is a symbolic link' } : code === 'ENXIO' ? { code: 'ENOTREGULAR', why: 'is a socket' } : null);
      if (d !== null) return untrusted(marker, st, homeUid, d);
      return unknown(marker, code, `${marker} exists but cannot be opened for reading by this process`, homeUid, st);
    }
    try {
      const st = yield* call('read', marker, 'fstat', fd);
      const d = distrust(st, homeUid);
      if (d !== null) return untrusted(marker, st, homeUid, d);
      if (st.size > MAX_MARKER_BYTES) return untrusted(marker, st, homeUid, { code: 'ETOO_LARGE', why: `is ${String(st.size)} bytes, more than a marker's ${String(MAX_MARKER_BYTES)}` });
      const buf = Buffer.alloc(MAX_MARKER_BYTES + 1);
      let total = 0;
      for (;;) {
        const n = yield* call('read', marker, 'read', fd, buf, total, buf.length - total, null);
        if (n === 0) break;
        total += n;
        if (total === buf.length) break;
      }
      if (total > MAX_MARKER_BYTES) return untrusted(marker, st, homeUid, { code: 'ETOO_LARGE', why: `grew past ${String(MAX_MARKER_BYTES)} bytes while it was read` });
      return result(marker, 'trusted', { content: buf.subarray(0, total).toString('utf8'), uid: st.uid, mode: st.mode & 0o7777, homeUid });
    } catch (err) {
      const code = errnoCode(err) ?? 'EUNKNOWN';
      return unknown(marker, code, `${marker} could not be read`, homeUid);
    } finally {
      try {
        yield* call('release', marker, 'close', fd);
      } catch {
        // a failed close of a read-only descriptor loses nothing
      }
    }
  } finally {
    try {
      yield* call('release', home, 'close', homeFd);
    } catch {
      // as above
    }
  }
}

/**
 * Looks at `<home>/.managed` without trusting it: the home is opened once, the marker is opened relative to
 * that descriptor with O_NOFOLLOW|O_NONBLOCK, and only a regular file with one link, owned by root or the
 * home's owner and not writable by group or others, is read (at most 4 KiB). Never throws, never blocks.
 */
export function inspectManagedMarker(home: string): ManagedMarker {
  return runSync(inspectPlan(path.resolve(home)));
}

const logged = new Set<string>();

function warnOnce(m: ManagedMarker): void {
  const key = `${m.path}\0${m.state}\0${m.code ?? ''}`;
  if (logged.has(key)) return;
  logged.add(key);
  getLogger().warn(m.state === 'unknown' ? 'managed marker state unknown; treating the home as not managed' : 'untrusted managed marker ignored', {
    path: m.path,
    code: m.code,
    reason: m.reason,
    fix: m.fix,
  });
}

/**
 * Decides whether `home` is a managed install: a non-blank `HERMES_MANAGED` wins; otherwise a trusted
 * `<home>/.managed` marker's content decides (see {@link inspectManagedMarker}); otherwise not managed. An
 * untrusted marker never decides (`source: 'none'`, `marker: 'untrusted'`), a marker that cannot be looked up
 * is `source: 'unknown'`: both are logged once with the path, the errno or reason, and the fix, and returned
 * in `warnings`.
 */
export function detectManaged(home: string, env: EnvSource = process.env): ManagedInfo {
  const fromEnv = env.HERMES_MANAGED;
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    return { ...interpretManagedValue(fromEnv), source: 'env', raw: fromEnv, marker: 'unread', warnings: [] };
  }
  const m = inspectManagedMarker(home);
  if (m.state === 'trusted' && m.content !== null) {
    return { ...interpretManagedValue(m.content), source: 'marker', raw: m.content, marker: 'trusted', warnings: [] };
  }
  if (m.state === 'absent') return { managed: false, system: null, source: 'none', raw: null, marker: 'absent', warnings: [] };
  warnOnce(m);
  const warning = `${m.reason ?? 'managed marker not believed'}; fix: ${m.fix ?? ''}`;
  return { managed: false, system: null, source: m.state === 'unknown' ? 'unknown' : 'none', raw: null, marker: m.state, warnings: [warning] };
}
