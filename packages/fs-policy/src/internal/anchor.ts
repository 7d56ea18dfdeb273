/**
 * How names are reached relative to a held directory descriptor.
 *
 * Node has no `openat`. On Linux, `/proc/self/fd/<fd>/<name>` gives the same semantics: the kernel follows
 * the magic link `/proc/self/fd/<fd>` to the very directory the descriptor refers to — wherever it has been
 * moved, whatever now sits at its old path — and looks `<name>` up inside it. With `name` a single component
 * (never `..`), nothing an adversary swaps above the held directory can redirect the lookup.
 *
 * The mode is decided once per process by a probe that depends on nothing the environment can point
 * elsewhere: `/` is held as an `O_PATH` descriptor (no permission is needed for that) and stat'ed through
 * its descriptor path. Without a usable `/proc/self/fd` (macOS, a container without procfs, `/proc` masked)
 * the package is in `fallback` mode: path operations followed by a `dev`/`ino` comparison, a weaker guarantee
 * that {@link anchorMode} reports and {@link fallbackReason} explains. In that mode privileged actors and
 * shared homes are refused (see `internal/fallback.ts`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export type AnchorMode = 'procfd' | 'fallback';

interface Probe {
  readonly mode: AnchorMode;
  /** Why descriptors are unavailable (null in `procfd` mode). */
  readonly reason: string | null;
}

let probed: Probe | undefined;
let forced: AnchorMode | undefined;

/** `O_PATH` (Linux): a descriptor that names an object without opening it for I/O. 0 where unknown. */
export const O_PATH = process.platform === 'linux' ? 0o10000000 : 0;

function errnoOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : String(err);
}

/**
 * Opens `/` (never TMPDIR or any other directory the environment chooses: an unusable one must not switch
 * the whole process to path operations) and compares its identity through `/proc/self/fd`.
 */
function probe(): Probe {
  if (process.platform !== 'linux') return { mode: 'fallback', reason: `this is not Linux (${process.platform}): there is no /proc/self/fd` };
  let fd: number;
  try {
    fd = fs.openSync('/', O_PATH | fs.constants.O_DIRECTORY);
  } catch (err) {
    return { mode: 'fallback', reason: `the probe could not hold / [${errnoOf(err)}]` };
  }
  try {
    const direct = fs.fstatSync(fd);
    let viaProc: fs.Stats;
    try {
      viaProc = fs.statSync(`/proc/self/fd/${String(fd)}/.`);
    } catch (err) {
      const code = errnoOf(err);
      return {
        mode: 'fallback',
        reason: code === 'ENOENT' ? 'procfs is not mounted here, or is masked: /proc/self/fd does not exist [ENOENT]' : `/proc/self/fd is not usable [${code}]`,
      };
    }
    if (direct.dev !== viaProc.dev || direct.ino !== viaProc.ino) {
      return { mode: 'fallback', reason: "the /proc mounted here is not this process's own: /proc/self/fd leads to other directories" };
    }
    return { mode: 'procfd', reason: null };
  } catch (err) {
    return { mode: 'fallback', reason: `the probe could not stat its descriptor of / [${errnoOf(err)}]` };
  } finally {
    fs.closeSync(fd);
  }
}

/** `procfd` when names are resolved relative to held descriptors; `fallback` when only path checks are possible. */
export function anchorMode(): AnchorMode {
  if (forced !== undefined) return forced;
  probed ??= probe();
  return probed.mode;
}

/**
 * Why descriptors are unavailable, in words with the errno that decided (e.g. `procfs is not mounted here, or
 * is masked: /proc/self/fd does not exist [ENOENT]`), or null in `procfd` mode.
 */
export function fallbackReason(): string | null {
  if (forced !== undefined) return forced === 'fallback' ? 'fallback mode forced by a test hook' : null;
  probed ??= probe();
  return probed.reason;
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
