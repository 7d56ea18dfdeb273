/**
 * Whether a process is provably dead — the one question a lock take-over and a temp-file salvage must answer
 * without guessing. A pid alone proves nothing: it may be recycled, or mean another process in another pid
 * namespace (a container sharing the volume), or on another host (a shared file system). What this module
 * trusts (Linux `/proc`):
 * - a process's identity is its pid **and** its start time (field 22 of `/proc/<pid>/stat`, clock ticks since
 *   boot), within one pid namespace (the inode of `/proc/self/ns/pid`) and one boot (`/proc/sys/kernel/random/boot_id`);
 * - dead: no process has that pid, it has exited (a zombie), or the process with that pid started at another
 *   tick (the pid was recycled) — all read in the same namespace and boot;
 * - a record from an earlier boot of this very host (same machine id and hostname, both in the initial pid
 *   namespace) is dead: the host restarted since;
 * - anything else — another namespace, another host, a `/proc` that cannot be read — is `unknown`, never dead.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { errnoCode } from './errors.js';
import { pidNamespace } from './internal/anchor.js';

/** Ticks per second of `/proc`'s start times (USER_HZ: 100 on every architecture Node runs on). */
export const CLOCK_TICKS_PER_SECOND = 100;
/** The inode of the initial pid namespace (`PROC_PID_INIT_INO`): the host's own, outside any container. */
const INITIAL_PID_NAMESPACE = '4026531836';

/** Who a process is, as far as another process can check it later. Null: not readable here. */
export interface ProcessIdentity {
  readonly pid: number;
  /** Field 22 of `/proc/<pid>/stat`: clock ticks after boot at which it started. */
  readonly startTicks: number | null;
  /** The inode of its pid namespace (`/proc/self/ns/pid`). */
  readonly pidns: string | null;
  /** `/proc/sys/kernel/random/boot_id`, without dashes. */
  readonly bootId: string | null;
  /** `/etc/machine-id` (32 hex). */
  readonly machineId: string | null;
  readonly hostname: string;
}

export interface Liveness {
  /** `dead` only when provable; `unknown` when it cannot be checked from here (never treat it as dead). */
  readonly state: 'alive' | 'dead' | 'unknown';
  /** Why, in words (for a log line or an error). */
  readonly reason: string;
}

interface ProcStat {
  /** Field 3: R, S, D, T (stopped), Z (zombie), X (dead), … */
  readonly state: string;
  readonly startTicks: number;
}

/** `/proc/<pid>/stat`'s state and start time; `gone` when no such process exists; else the errno. */
export function readProcStat(pid: number): ProcStat | 'gone' | { readonly unreadable: string } {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${String(pid)}/stat`, 'latin1');
  } catch (err) {
    const code = errnoCode(err) ?? 'EUNKNOWN';
    // ENOENT/ESRCH: the process does not exist — but only if /proc itself is there to say so.
    if ((code === 'ENOENT' || code === 'ESRCH') && procUsable()) return 'gone';
    return { unreadable: code };
  }
  // The command name (field 2) is in parentheses and may contain spaces or ')': fields start after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = rest[0] ?? '';
  const startTicks = Number(rest[19]);
  if (state === '' || !Number.isSafeInteger(startTicks)) return { unreadable: 'EPARSE' };
  return { state, startTicks };
}

function procUsable(): boolean {
  try {
    return fs.statSync('/proc/self/stat').isFile();
  } catch {
    return false;
  }
}

function readTrimmed(file: string): string | null {
  try {
    const value = fs.readFileSync(file, 'utf8').trim().replace(/-/g, '').toLowerCase();
    return /^[0-9a-f]{32}$/.test(value) ? value : null;
  } catch {
    return null;
  }
}

let self: ProcessIdentity | undefined;

/** This process's identity (read once). */
export function selfIdentity(): ProcessIdentity {
  if (self === undefined) {
    const stat = readProcStat(process.pid);
    self = {
      pid: process.pid,
      startTicks: typeof stat === 'object' && 'startTicks' in stat ? stat.startTicks : null,
      pidns: pidNamespace(),
      bootId: readTrimmed('/proc/sys/kernel/random/boot_id'),
      machineId: readTrimmed('/etc/machine-id') ?? readTrimmed('/var/lib/dbus/machine-id'),
      hostname: os.hostname(),
    };
  }
  return self;
}

let btime: { value: number | null; read: number } | undefined;

/** The boot time, epoch milliseconds (`btime` of `/proc/stat`, whole seconds, cut down), read at most once a second. */
export function bootTimeMs(): number | null {
  const now = Date.now();
  if (btime !== undefined && now - btime.read < 1000) return btime.value;
  let value: number | null;
  try {
    const m = /^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'latin1'));
    value = m === null ? null : Number(m[1]) * 1000;
  } catch {
    value = null;
  }
  btime = { value, read: now };
  return value;
}

function gone(pid: number, stat: ProcStat | 'gone'): Liveness | undefined {
  if (stat === 'gone') return { state: 'dead', reason: `no process has pid ${String(pid)}` };
  if (stat.state === 'Z' || stat.state === 'X') return { state: 'dead', reason: `pid ${String(pid)} has exited (${stat.state === 'Z' ? 'a zombie' : 'dead'})` };
  return undefined;
}

/**
 * Whether the process a record names is alive, dead or cannot be checked from here. Dead only when provable:
 * same boot and pid namespace as this process, and the pid is gone, has exited, or belongs to a process that
 * started at another tick (recycled); or the record is of an earlier boot of this very host (same machine id
 * and hostname, both in the initial pid namespace). A stopped (`SIGSTOP`, a paused VM) process is alive.
 */
export function processLiveness(record: ProcessIdentity): Liveness {
  const me = selfIdentity();
  const pid = record.pid;
  if (!validPid(pid)) return { state: 'unknown', reason: `${String(pid)} is no pid` };
  if (record.bootId === null || me.bootId === null) return { state: 'unknown', reason: 'the boot id is not readable, so the pid cannot be checked' };
  if (record.bootId !== me.bootId) {
    const sameHost =
      record.machineId !== null &&
      record.machineId === me.machineId &&
      record.hostname === me.hostname &&
      record.pidns === INITIAL_PID_NAMESPACE &&
      me.pidns === INITIAL_PID_NAMESPACE;
    if (sameHost) return { state: 'dead', reason: `pid ${String(pid)} ran in an earlier boot of this host (boot ${record.bootId}); the host restarted since` };
    return { state: 'unknown', reason: `pid ${String(pid)} runs on host ${record.hostname} in boot ${record.bootId}, not this one: it cannot be checked from here` };
  }
  if (record.pidns === null || record.pidns !== me.pidns) {
    return { state: 'unknown', reason: `pid ${String(pid)} is in pid namespace ${record.pidns ?? '(unknown)'}, not this one (${me.pidns ?? 'unknown'}): it cannot be checked from here` };
  }
  const stat = readProcStat(pid);
  if (typeof stat === 'object' && 'unreadable' in stat) return { state: 'unknown', reason: `/proc/${String(pid)}/stat cannot be read (${stat.unreadable})` };
  const dead = gone(pid, stat);
  if (dead !== undefined) return dead;
  const live = stat as ProcStat;
  if (record.startTicks === null) return { state: 'unknown', reason: `pid ${String(pid)} exists, and the record has no start time to tell whether it is the same process` };
  if (live.startTicks !== record.startTicks) {
    return { state: 'dead', reason: `pid ${String(pid)} was recycled: the process with it started at tick ${String(live.startTicks)}, the recorded one at ${String(record.startTicks)}` };
  }
  return { state: 'alive', reason: `pid ${String(pid)} is alive${live.state === 'T' || live.state === 't' ? ' (stopped)' : ''}` };
}

/**
 * Whether the writer of a file named by `pid` (and its pid namespace `pidns`, undefined when the name carries
 * none) is alive. The pid counts only in this process's namespace (a name without one only when this process
 * has none either). It is dead when the pid is gone or has exited, or when the process that has it now started
 * after `modifiedMs` — the file's last modification, epoch ms — by more than a clock tick: that process cannot
 * have written it (the pid was recycled). A live writer is alive however old its file is, stopped or not.
 * Without `/proc`, `kill(pid, 0)` decides (no recycling check).
 */
export function writerLiveness(pid: number, pidns: string | undefined, modifiedMs?: number): Liveness {
  if (!validPid(pid)) return { state: 'unknown', reason: `${String(pid)} is no pid` };
  const mine = pidNamespace();
  if (pidns === undefined ? mine !== null : pidns !== mine) {
    return { state: 'unknown', reason: `pid ${String(pid)} is in ${pidns === undefined ? 'an unnamed' : `another (${pidns})`} pid namespace: it cannot be checked from here` };
  }
  const stat = readProcStat(pid);
  if (typeof stat === 'object' && 'unreadable' in stat) {
    return pidExists(pid) ? { state: 'alive', reason: `pid ${String(pid)} exists (no /proc to check when it started)` } : { state: 'dead', reason: `no process has pid ${String(pid)}` };
  }
  const dead = gone(pid, stat);
  if (dead !== undefined) return dead;
  const live = stat as ProcStat;
  const boot = modifiedMs === undefined ? null : bootTimeMs();
  if (boot !== null && modifiedMs !== undefined) {
    // btime is cut down to whole seconds, so this start is never later than the true one: "after" is proven.
    const startedMs = boot + (live.startTicks * 1000) / CLOCK_TICKS_PER_SECOND;
    const tickMs = 1000 / CLOCK_TICKS_PER_SECOND;
    if (startedMs > modifiedMs + tickMs) {
      return { state: 'dead', reason: `pid ${String(pid)} was recycled: the process with it started after the file was last written` };
    }
  }
  return { state: 'alive', reason: `pid ${String(pid)} is alive${live.state === 'T' || live.state === 't' ? ' (stopped)' : ''}` };
}

function validPid(pid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 0;
}

/** True when a process with this pid exists (EPERM means it exists but belongs to someone else). */
export function pidExists(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}
