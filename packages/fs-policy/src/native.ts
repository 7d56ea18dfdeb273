/**
 * The native descriptor layer: a Node-API addon (shipped prebuilt in the per-platform optional packages
 * `@hermes/fs-policy-linux-x64-gnu` and `@hermes/fs-policy-linux-arm64-gnu`) with the `*at` syscalls Node
 * lacks. When it loads, names below a held directory are reached with `openat`/`mkdirat`/`renameat2`/… on the
 * descriptor itself instead of through `/proc/self/fd/<fd>/<name>`; what each step checks is the same in both
 * modes.
 *
 * The mode is decided once per process: `HERMES_FS_ANCHOR=procfd|native` forces one (tests); otherwise the
 * addon is used when it loads. A missing or unloadable addon is one log line, then `procfd`. The test hook
 * `HERMES_FS_NATIVE_PATH=<absolute path>` loads another build of the addon (the AddressSanitizer one).
 */
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fallbackReason, anchorMode as descriptorMode } from './internal/anchor.js';
import { getLogger } from './logger.js';

/** `fstatat` as the addon answers it (numbers, as `fs.Stats` without `bigint`). */
export interface NativeStat {
  readonly dev: number;
  readonly ino: number;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly nlink: number;
  readonly size: number;
  readonly rdev: number;
  readonly blksize: number;
  readonly blocks: number;
  readonly atimeMs: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
}

/** The addon's functions. Each throws (or, `…Async`, rejects) a Node-shaped system error: `code`, `errno`, `syscall`. */
export interface NativeBinding {
  openat(dirfd: number, path: string, flags: number, mode: number): number;
  openatAsync(dirfd: number, path: string, flags: number, mode: number): Promise<number>;
  /** `resolve`: `RESOLVE_*` bits. `ENOSYS` where the kernel has no openat2 (before 5.6). */
  openat2(dirfd: number, path: string, flags: number, mode: number, resolve: number): number;
  openat2Async(dirfd: number, path: string, flags: number, mode: number, resolve: number): Promise<number>;
  mkdirat(dirfd: number, name: string, mode: number): void;
  mkdiratAsync(dirfd: number, name: string, mode: number): Promise<void>;
  /** `flags`: 0, `RENAME_NOREPLACE` or `RENAME_EXCHANGE`. */
  renameat2(olddirfd: number, oldname: string, newdirfd: number, newname: string, flags: number): void;
  renameat2Async(olddirfd: number, oldname: string, newdirfd: number, newname: string, flags: number): Promise<void>;
  /** `flags`: 0 or `AT_REMOVEDIR`. */
  unlinkat(dirfd: number, name: string, flags: number): void;
  unlinkatAsync(dirfd: number, name: string, flags: number): Promise<void>;
  linkat(olddirfd: number, oldname: string, newdirfd: number, newname: string, flags: number): void;
  linkatAsync(olddirfd: number, oldname: string, newdirfd: number, newname: string, flags: number): Promise<void>;
  /** Names the file open on `fd`: `AT_EMPTY_PATH` where permitted, else `/proc/self/fd/<fd>` followed. Says which. */
  linkFd(fd: number, newdirfd: number, newname: string): 'empty-path' | 'procfd';
  linkFdAsync(fd: number, newdirfd: number, newname: string): Promise<'empty-path' | 'procfd'>;
  /** Never follows a link (`AT_SYMLINK_NOFOLLOW` always); `flags` may add `AT_EMPTY_PATH`. */
  fstatat(dirfd: number, name: string, flags?: number): NativeStat;
  fstatatAsync(dirfd: number, name: string, flags?: number): Promise<NativeStat>;
  readlinkat(dirfd: number, name: string): string;
  readlinkatAsync(dirfd: number, name: string): Promise<string>;
  fchownat(dirfd: number, name: string, uid: number, gid: number, flags: number): void;
  fchownatAsync(dirfd: number, name: string, uid: number, gid: number, flags: number): Promise<void>;
  fchmod(fd: number, mode: number): void;
  fchmodAsync(fd: number, mode: number): Promise<void>;
  openat2Probe(): { available: boolean; code: string };
  readonly constants: {
    readonly O_PATH: number;
    readonly O_TMPFILE: number;
    readonly AT_EMPTY_PATH: number;
    readonly AT_REMOVEDIR: number;
    readonly AT_SYMLINK_FOLLOW: number;
    readonly AT_SYMLINK_NOFOLLOW: number;
    readonly RESOLVE_NO_XDEV: number;
    readonly RESOLVE_NO_MAGICLINKS: number;
    readonly RESOLVE_NO_SYMLINKS: number;
    readonly RESOLVE_BENEATH: number;
    readonly RESOLVE_IN_ROOT: number;
    readonly RENAME_NOREPLACE: number;
    readonly RENAME_EXCHANGE: number;
  };
  readonly abi: number;
}

/** The platform packages, by `process.arch` (Linux with glibc only). */
const PLATFORM_PACKAGES: Readonly<Partial<Record<string, string>>> = {
  x64: '@hermes/fs-policy-linux-x64-gnu',
  arm64: '@hermes/fs-policy-linux-arm64-gnu',
};

/**
 * Test hook, not for production: an absolute path to another build of the addon, loaded instead of the platform
 * package (the AddressSanitizer build of `tooling/scripts/asan-test.sh`). It grants nothing the environment did
 * not already (`LD_PRELOAD`, `NODE_OPTIONS`); the loaded file still has to answer ABI 1.
 */
const NATIVE_PATH_VAR = 'HERMES_FS_NATIVE_PATH';

/**
 * What the addon is loaded from: the platform package for this machine (Linux, glibc, x64 or arm64), or
 * undefined where none is built; the file `HERMES_FS_NATIVE_PATH` names instead, when that is an absolute path.
 */
export function platformPackage(): string | undefined {
  const override = process.env[NATIVE_PATH_VAR];
  if (override !== undefined && path.isAbsolute(override)) return override;
  const pkg = PLATFORM_PACKAGES[process.arch];
  if (process.platform !== 'linux' || pkg === undefined) return undefined;
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: unknown } } | undefined)?.header;
  return typeof header?.glibcVersionRuntime === 'string' ? pkg : undefined;
}

interface Loaded {
  readonly binding: NativeBinding | undefined;
  /** Why the addon is not used (undefined when it is). */
  readonly why: string | undefined;
  readonly openat2: boolean;
}

let loaded: Loaded | undefined;

function load(): Loaded {
  const force = process.env.HERMES_FS_ANCHOR;
  if (force !== undefined && force !== '' && force !== 'native' && force !== 'procfd') {
    getLogger().warn(`HERMES_FS_ANCHOR=${JSON.stringify(force)} ignored: only "native" or "procfd"`, { fix: 'unset HERMES_FS_ANCHOR' });
  }
  const override = process.env[NATIVE_PATH_VAR];
  if (override !== undefined && override !== '' && !path.isAbsolute(override)) {
    getLogger().warn(`${NATIVE_PATH_VAR}=${JSON.stringify(override)} ignored: not an absolute path`, { fix: `unset ${NATIVE_PATH_VAR}` });
  }
  if (force === 'procfd') return { binding: undefined, why: 'HERMES_FS_ANCHOR=procfd', openat2: false };
  const pkg = platformPackage();
  if (pkg === undefined) {
    const why = `no native build for ${process.platform}-${process.arch}`;
    if (force === 'native') getLogger().error(`HERMES_FS_ANCHOR=native, but ${why}`, { fix: 'unset HERMES_FS_ANCHOR' });
    return { binding: undefined, why, openat2: false };
  }
  let binding: NativeBinding;
  try {
    binding = createRequire(import.meta.url)(pkg) as NativeBinding;
    if (binding.abi !== 1) throw new Error(`addon ABI ${String(binding.abi)}, expected 1`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = `${pkg} could not be loaded [${code ?? 'ERROR'}]: ${err instanceof Error ? err.message.split('\n')[0] ?? '' : String(err)}`;
    const log = getLogger();
    (force === 'native' ? log.error.bind(log) : log.info.bind(log))('native descriptor layer unavailable; resolving names through /proc/self/fd', {
      package: pkg,
      code,
      reason: why,
      fix:
        pkg === process.env[NATIVE_PATH_VAR]
          ? `unset ${NATIVE_PATH_VAR} (a test hook), or build that file`
          : `install ${pkg} (an optional dependency of @hermes/fs-policy; a package manager that skips optional dependencies leaves it out)`,
    });
    return { binding: undefined, why, openat2: false };
  }
  const probe = binding.openat2Probe();
  if (!probe.available) {
    getLogger().info('openat2 is unavailable: names are reached one component at a time with openat', { code: probe.code });
  }
  return { binding, why: undefined, openat2: probe.available };
}

/**
 * The addon when the native layer is in force (loaded, not switched off by `HERMES_FS_ANCHOR=procfd`, and
 * descriptors usable on this machine), else undefined. Loaded at the first call, once.
 */
export function nativeBinding(): NativeBinding | undefined {
  loaded ??= load();
  return loaded.binding !== undefined && descriptorMode() === 'procfd' ? loaded.binding : undefined;
}

/**
 * True when a lookup of several components beneath a held directory can be one `openat2` the kernel contains
 * (the native layer is in force and this kernel has `openat2`).
 */
export function beneathAvailable(): boolean {
  loaded ??= load();
  return loaded.binding !== undefined && loaded.openat2 && descriptorMode() === 'procfd';
}

/** How names below a held directory are reached in this process, and why. */
export interface AnchorInfo {
  /**
   * `native`: `*at` syscalls on the held descriptors (the addon); `procfd`: through `/proc/self/fd/<fd>/<name>`;
   * `refuse`: no descriptors at all (no usable `/proc`): path operations, and the fail-closed refusals.
   */
  readonly mode: 'native' | 'procfd' | 'refuse';
  /** In words: why this mode (the decisive errno or setting). */
  readonly reason: string;
  /** Whether the kernel offers `openat2` (only probed when the addon loads; false otherwise). */
  readonly openat2: boolean;
}

/**
 * Which anchor mode is in force and why (decided once per process, at the first call of this or of any
 * operation). The mode changes how each step of a walk is made, never what it checks: owner, mode, type and
 * link policy are the same in all three. `refuse` wins over the addon: without a usable `/proc` the package
 * refuses privileged and shared-home work whatever else is available.
 */
export function anchorInfo(): AnchorInfo {
  loaded ??= load();
  if (descriptorMode() === 'fallback') {
    return { mode: 'refuse', reason: fallbackReason() ?? 'descriptors are unavailable', openat2: loaded.openat2 };
  }
  if (loaded.binding !== undefined) {
    return { mode: 'native', reason: loaded.openat2 ? 'the addon is loaded and the kernel has openat2' : 'the addon is loaded; the kernel has no openat2 (openat per component)', openat2: loaded.openat2 };
  }
  return { mode: 'procfd', reason: loaded.why ?? 'the addon is not loaded', openat2: false };
}

/** Test hook: forget the decision, so that the next call loads again (after a change of HERMES_FS_ANCHOR). */
export function resetNativeForTests(): void {
  loaded = undefined;
}
