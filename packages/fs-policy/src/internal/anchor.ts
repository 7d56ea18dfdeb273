/**
 * How names are reached relative to a held directory descriptor.
 *
 * Node has no `openat`. On Linux, `/proc/self/fd/<fd>/<name>` gives the same semantics: the kernel follows
 * the magic link `/proc/self/fd/<fd>` to the very directory the descriptor refers to — wherever it has been
 * moved, whatever now sits at its old path — and looks `<name>` up inside it. With `name` a single component
 * (never `..`), nothing an adversary swaps above the held directory can redirect the lookup.
 *
 * The mode is decided once per process by a probe: open a directory, stat it through its descriptor path and
 * compare identities. Without a usable `/proc/self/fd` (macOS, a container without procfs, a process whose
 * `/proc/self` is not accessible) the package falls back to path operations followed by a `dev`/`ino`
 * comparison, a weaker guarantee that {@link anchorMode} reports.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export type AnchorMode = 'procfd' | 'fallback';

let mode: AnchorMode | undefined;
let forced: AnchorMode | undefined;

function probe(): AnchorMode {
  if (process.platform !== 'linux') return 'fallback';
  let fd: number | undefined;
  try {
    fd = fs.openSync(os.tmpdir(), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    const direct = fs.fstatSync(fd);
    const viaProc = fs.statSync(`/proc/self/fd/${String(fd)}/.`);
    return direct.dev === viaProc.dev && direct.ino === viaProc.ino ? 'procfd' : 'fallback';
  } catch {
    return 'fallback';
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** `procfd` when names are resolved relative to held descriptors; `fallback` when only path checks are possible. */
export function anchorMode(): AnchorMode {
  if (forced !== undefined) return forced;
  mode ??= probe();
  return mode;
}

/** Test hook: force a mode (undefined restores the probe's answer). */
export function forceAnchorMode(m: AnchorMode | undefined): void {
  forced = m;
}

/** The path through which `name` inside the directory held by `fd` (logically at `dirPath`) is reached. */
export function atFd(fd: number, dirPath: string, name: string): string {
  return anchorMode() === 'procfd' ? `/proc/self/fd/${String(fd)}/${name}` : path.join(dirPath, name);
}

/** The path that reaches the object held by `fd` itself (to reopen it, or `chmod` an `O_PATH` descriptor). */
export function selfFd(fd: number, logicalPath: string): string {
  return anchorMode() === 'procfd' ? `/proc/self/fd/${String(fd)}` : logicalPath;
}

/** `O_PATH` (Linux): a descriptor that names an object without opening it for I/O. 0 where unknown. */
export const O_PATH = process.platform === 'linux' ? 0o10000000 : 0;

let pidNs: string | null | undefined;

/**
 * The inode of this process's PID namespace (`/proc/self/ns/pid`), or null without procfs. Two processes
 * compare pids meaningfully only when this matches.
 */
export function pidNamespace(): string | null {
  if (pidNs !== undefined) return pidNs;
  try {
    const m = /^pid:\[(\d+)\]$/.exec(fs.readlinkSync('/proc/self/ns/pid'));
    pidNs = m?.[1] ?? null;
  } catch {
    pidNs = null;
  }
  return pidNs;
}
