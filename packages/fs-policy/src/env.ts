import * as os from 'node:os';
import * as path from 'node:path';
import { FsPolicyError } from './errors.js';
import { type AnchorMode, anchorMode, fallbackReason } from './internal/anchor.js';
import { detectManaged, type ManagedInfo } from './managed.js';
import { readRegularFileSync } from './read.js';
import { MANAGED_INSTALL } from './registry.js';
import { getLogger } from './logger.js';

/** The environment variables this package reads. */
export type EnvSource = Readonly<Record<string, string | undefined>>;

/** The home directory of the current user, from `HOME` when set, else the password database. */
function userHome(env: EnvSource): string {
  const fromEnv = env.HOME?.trim();
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : os.homedir();
}

/** Expands a leading `~` or `~/` against the user's home. Other `~user` forms are left as they are. */
export function expandTilde(input: string, env: EnvSource = process.env): string {
  if (input === '~') return userHome(env);
  if (input.startsWith('~/')) return path.join(userHome(env), input.slice(2));
  return input;
}

/**
 * Resolves the Hermes home: `HERMES_HOME` (trimmed, `~` expanded, made absolute and normalised), else
 * `~/.hermes`. A `profile` selects `<home>/profiles/<name>`.
 */
export function resolveHermesHome(env: EnvSource = process.env, options: { profile?: string } = {}): string {
  const raw = env.HERMES_HOME?.trim();
  const base = raw !== undefined && raw !== '' ? raw : '~/.hermes';
  const home = path.resolve(expandTilde(base, env));
  return options.profile === undefined ? home : profileHome(home, options.profile);
}

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** `<root>/profiles/<name>`; the name must be a plain identifier (no separators, no leading dot, no `..`). */
export function profileHome(root: string, name: string): string {
  if (!PROFILE_NAME.test(name) || name.includes('..')) {
    throw new FsPolicyError({
      code: 'EINVALID_PATH',
      step: 'resolve',
      path: name,
      message: `invalid profile name ${JSON.stringify(name)}: use letters, digits, '-', '_' and '.', not starting with '.'`,
      hint: 'choose a profile name such as "work" or "bot-2".',
    });
  }
  return path.join(root, 'profiles', name);
}

export {
  detectManaged,
  inspectManagedMarker,
  interpretManagedValue,
  type ManagedInfo,
  type ManagedMarker,
  type ManagedSource,
  type MarkerState,
} from './managed.js';

export interface ParsedHomeMode {
  /** The mode to use for directories that honour HERMES_HOME_MODE (0o700 when unset or rejected). */
  readonly mode: number;
  /** `env` when a valid value was given, `default` otherwise. */
  readonly source: 'env' | 'default';
  /** Warnings a user must see: the value was rejected, or accepted with group/other write bits. */
  readonly warnings: readonly string[];
  /** True when a value was given but rejected (the default applies). */
  readonly rejected: boolean;
}

export const DEFAULT_DIR_MODE = 0o700;

const OCTAL = /^(?:0o|0)?([0-7]+)$/i;

/**
 * Parses `HERMES_HOME_MODE` (`0701`, `701`, `0o701`). Never throws: an unparsable, out-of-range, negative,
 * owner-locking (missing owner rwx) or setuid/sticky value is rejected with a warning and the safe default
 * 0700 applies; group/other write bits are accepted with a warning.
 */
export function parseHomeMode(raw: string | undefined): ParsedHomeMode {
  const text = raw?.trim() ?? '';
  if (text === '') return { mode: DEFAULT_DIR_MODE, source: 'default', warnings: [], rejected: false };
  const reject = (why: string): ParsedHomeMode => ({
    mode: DEFAULT_DIR_MODE,
    source: 'default',
    rejected: true,
    warnings: [`HERMES_HOME_MODE=${JSON.stringify(raw)} rejected: ${why}; using 0700`],
  });
  if (text.startsWith('-')) return reject('a mode cannot be negative');
  const m = OCTAL.exec(text);
  const digits = m?.[1];
  if (digits === undefined) return reject('not an octal mode (expected e.g. 0701, 701 or 0o701)');
  const value = digits.length > 8 ? Number.POSITIVE_INFINITY : parseInt(digits, 8);
  if (value > 0o7777) return reject('out of range (the largest mode is 07777)');
  if ((value & 0o700) !== 0o700) return reject('the owner must keep rwx (0700) on the home, or Hermes locks itself out');
  if ((value & 0o4000) !== 0) return reject('setuid makes no sense on a directory');
  if ((value & 0o1000) !== 0) return reject('the sticky bit would stop Hermes replacing its own files in a shared home');
  const warnings: string[] = [];
  if ((value & 0o022) !== 0) {
    warnings.push(
      `HERMES_HOME_MODE=${JSON.stringify(raw)} grants group/other write (0${value.toString(8)}); ` +
        'other users can then add or replace files in the home',
    );
  }
  return { mode: value, source: 'env', warnings, rejected: false };
}

/** Parses `HERMES_UID`/`HERMES_GID`: a non-negative integer, else undefined with a warning. */
export function parseId(raw: string | undefined, name: string): { value: number | undefined; warning?: string } {
  const text = raw?.trim() ?? '';
  if (text === '') return { value: undefined };
  if (!/^\d{1,10}$/.test(text) || Number(text) > 0xfffffffe) {
    return { value: undefined, warning: `${name}=${JSON.stringify(raw)} ignored: expected a non-negative integer id` };
  }
  return { value: Number(text) };
}

const warned = new Set<string>();

/** Logs an environment warning once per process, however often the environment is loaded. */
function warnOnce(message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  getLogger().warn(message);
}

let cachedUmask: number | null | undefined;

/**
 * The process umask, read without changing it — only possible through procfs (`Umask:` in
 * /proc/self/status, Linux ≥ 4.7). Null where it cannot be read: Node's `process.umask()` would write the
 * process-wide mask twice to read it (and throws inside Worker threads), so it is never called. The value is
 * cached; pass `{ fresh: true }` after the embedder changed the umask.
 */
export function readUmask(options: { fresh?: boolean } = {}): number | null {
  if (cachedUmask !== undefined && options.fresh !== true) return cachedUmask;
  let value: number | null = null;
  try {
    const status = readRegularFileSync('/proc/self/status', { maxBytes: 1 << 20, follow: true }).data.toString('utf8');
    const m = /^Umask:\s*([0-7]+)$/m.exec(status);
    if (m?.[1] !== undefined) value = parseInt(m[1], 8);
  } catch {
    value = null;
  }
  cachedUmask = value;
  return value;
}

/**
 * The umask assumed where it cannot be read: the NixOS service's `UMask=0007` on a managed install (what the
 * activation grants), the common `022` otherwise. Only modes derived from the umask (managed state files)
 * depend on it, and those are capped at 0660 whatever it is.
 */
function assumedUmask(managed: boolean): number {
  return managed ? MANAGED_INSTALL.umask : 0o022;
}

/** Everything the policy needs to know about the process and its home, resolved once. */
export interface HermesEnvironment {
  readonly home: string;
  readonly managed: ManagedInfo;
  readonly homeMode: ParsedHomeMode;
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  readonly umask: number;
  /** `proc`: read from /proc/self/status; `option`: given by the caller; `assumed`: unreadable here (see readUmask). */
  readonly umaskSource: 'proc' | 'option' | 'assumed';
  /**
   * How paths are resolved: `procfd` (descriptor-relative through /proc/self/fd — the full guarantee) or
   * `fallback` (no usable /proc: path operations checked by dev/ino after each open — a weaker guarantee,
   * so a privileged actor and any write into a shared home are refused with `EUNSAFE_FALLBACK`).
   */
  readonly resolver: AnchorMode;
  /** Why descriptors are unavailable (with the errno that decided), or null in `procfd` mode. */
  readonly resolverReason?: string | null;
  /**
   * The explicit opt-in to act by path in fallback mode where it is otherwise refused (root, HERMES_UID/GID,
   * a shared home). True only when `loadEnvironment` was given `allowPathFallback: true` AND the environment
   * has `HERMES_ALLOW_PATH_FALLBACK=1`. A concurrent rename by another uid can then redirect writes.
   */
  readonly allowPathFallback?: boolean;
  readonly warnings: readonly string[];
}

export interface LoadEnvironmentOptions {
  /** Use this home instead of resolving HERMES_HOME. */
  home?: string;
  /** A named profile under the home. */
  profile?: string;
  /** Defaults to process.env. */
  env?: EnvSource;
  /** Override the umask (tests, or an embedder that knows it). */
  umask?: number;
  /**
   * Accept path operations in fallback mode for a privileged actor or a shared home (see
   * {@link HermesEnvironment.allowPathFallback}). Effective only together with `HERMES_ALLOW_PATH_FALLBACK=1`.
   */
  allowPathFallback?: boolean;
}

/** The opt-in needs both the caller's option and the operator's variable; in fallback mode either alone is a warning. */
function pathFallbackOptIn(option: boolean | undefined, env: EnvSource, resolver: AnchorMode, warnings: string[]): boolean {
  const variable = env.HERMES_ALLOW_PATH_FALLBACK?.trim();
  const fromEnv = variable === '1';
  if (variable !== undefined && variable !== '' && !fromEnv) {
    warnings.push(`HERMES_ALLOW_PATH_FALLBACK=${JSON.stringify(env.HERMES_ALLOW_PATH_FALLBACK)} ignored: only 1 opts in`);
  }
  if (resolver === 'fallback' && fromEnv && option !== true) warnings.push('HERMES_ALLOW_PATH_FALLBACK=1 has no effect: this program does not allow path fallback');
  if (resolver === 'fallback' && option === true && !fromEnv) warnings.push('allowPathFallback has no effect without HERMES_ALLOW_PATH_FALLBACK=1 in the environment');
  return option === true && fromEnv;
}

/**
 * Resolves the home, managed state, HERMES_HOME_MODE, HERMES_UID/GID and the umask. Never throws for bad
 * environment values: each becomes a warning (logged once here) and a safe default.
 */
export function loadEnvironment(options: LoadEnvironmentOptions = {}): HermesEnvironment {
  const env = options.env ?? process.env;
  const root = options.home !== undefined ? path.resolve(expandTilde(options.home, env)) : resolveHermesHome(env);
  const home = options.profile === undefined ? root : profileHome(root, options.profile);
  const managed = detectManaged(home, env);
  const homeMode = parseHomeMode(env.HERMES_HOME_MODE);
  const uid = parseId(env.HERMES_UID, 'HERMES_UID');
  const gid = parseId(env.HERMES_GID, 'HERMES_GID');
  const warnings = [...homeMode.warnings];
  if (uid.warning !== undefined) warnings.push(uid.warning);
  if (gid.warning !== undefined) warnings.push(gid.warning);
  if (managed.managed && homeMode.source === 'env') {
    warnings.push('HERMES_HOME_MODE is ignored on a managed install: the package manager owns directory modes');
  }
  const read = options.umask === undefined ? readUmask() : null;
  const umask = options.umask ?? read ?? assumedUmask(managed.managed);
  const umaskSource = options.umask !== undefined ? 'option' : read !== null ? 'proc' : 'assumed';
  const resolver = anchorMode();
  const resolverReason = fallbackReason();
  const allowPathFallback = pathFallbackOptIn(options.allowPathFallback, env, resolver, warnings);
  if (resolver === 'fallback') {
    warnings.push(
      `descriptors are unavailable (${resolverReason ?? 'reason unknown'}): paths are resolved by name and checked by dev/ino afterwards, ` +
        (allowPathFallback
          ? 'and HERMES_ALLOW_PATH_FALLBACK=1 with allowPathFallback lets root, HERMES_UID/GID and shared homes act by path (a concurrent rename can redirect them)'
          : 'so root, HERMES_UID/GID and writes into a shared home are refused (EUNSAFE_FALLBACK)'),
    );
  }
  for (const w of warnings) warnOnce(w);
  // The marker's warnings were logged (once, with path, code and fix) where they arose.
  warnings.unshift(...(managed.warnings ?? []));
  return {
    home,
    managed,
    homeMode,
    uid: uid.value,
    gid: gid.value,
    umask,
    umaskSource,
    resolver,
    resolverReason,
    allowPathFallback,
    warnings,
  };
}
