import { resolve } from 'node:path';
import { FsPolicyError, type HermesEnvironment, loadEnvironment, readHomeFileSync } from '@hermes/fs-policy';
import { ConfigError } from './errors.js';
import { defaultLoaded, parseConfig, type LoadedConfig } from './parse.js';

/** Options of {@link loadConfig} and {@link loadConfigSync}. */
export interface LoadConfigOptions {
  /** The config file: absolute, or relative to `home`. Default `config.yaml`. */
  readonly file?: string;
  /**
   * Directories a `config.yaml` link may lead into (its real path, after every link, must lie below one of
   * them). Default {@link DEFAULT_LINK_PREFIXES} (NixOS links config.yaml into the store, which only root
   * writes). Any other link is reported, never read through. `[]` refuses every link.
   */
  readonly linkPrefixes?: readonly string[];
  /** The fs-policy environment of `home` (whose files are trusted); loaded for `home` when omitted. */
  readonly env?: HermesEnvironment;
}

/** Where a config.yaml link may lead by default: the Nix store. */
export const DEFAULT_LINK_PREFIXES: readonly string[] = ['/nix/store'];

function configPath(home: string, options: LoadConfigOptions | undefined): string {
  if (home === '') throw new TypeError('@hermes/config: home must be a non-empty path');
  return resolve(home, options?.file ?? 'config.yaml');
}

/** The most a config file may hold: a larger one is refused unread. */
const MAX_BYTES = 4 * 1024 * 1024;

/**
 * Reads the file as @hermes/fs-policy reads every file of the home (`readHomeFileSync`): through the held
 * directory, a link refused unless it leads into `linkPrefixes`, a FIFO/socket/device refused without
 * being opened for I/O, a file owned by anyone but this uid, root or the home's owner refused before a byte
 * is read, a file with a second name refused, at most 4 MiB. `undefined`: the file does not exist.
 */
function readConfigBytes(home: string, file: string, options: LoadConfigOptions | undefined): Uint8Array | undefined {
  const env = options?.env ?? loadEnvironment({ home });
  return readHomeFileSync(file, { env, maxBytes: MAX_BYTES, linkPrefixes: options?.linkPrefixes ?? DEFAULT_LINK_PREFIXES })?.data;
}

function errnoCode(error: unknown): string | undefined {
  if (error instanceof FsPolicyError) return error.code;
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

function readError(file: string, error: unknown): ConfigError {
  const reason = error instanceof Error ? error.message : String(error);
  return new ConfigError(
    file,
    [{ kind: 'read', keyPath: '', value: undefined, expected: 'a readable file', message: `cannot read: ${reason}` }],
    { cause: error },
  );
}

/** Decode strictly: a file that is not UTF-8 is reported, not read with replacement characters. */
function decode(file: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (error) {
    throw new ConfigError(
      file,
      [{ kind: 'read', keyPath: '', value: undefined, expected: 'UTF-8 text', message: 'not valid UTF-8 text' }],
      { cause: error },
    );
  }
}

/**
 * Load `<home>/config.yaml` (or `options.file`) and validate it.
 *
 * Guarantees: a missing file yields the defaults with `source: 'default'` and no warnings; any other
 * failure — unreadable file, a symbolic link that does not lead into `linkPrefixes` (reported, never read
 * through), a FIFO/socket/device in its place (refused without blocking), a file owned by another uid than
 * this one, root or the home's owner (reported, not read), a file with a second name, a file over 4 MiB,
 * invalid UTF-8, invalid YAML, a non-mapping top level, invalid values —
 * rejects with a {@link ConfigError} naming the absolute file path; otherwise the result is exactly
 * {@link parseConfig}'s for the file's text. `home` is used as given (resolved against the working
 * directory, no `~` expansion) and nothing is written or created.
 */
export async function loadConfig(home: string, options?: LoadConfigOptions): Promise<LoadedConfig> {
  // A config file is small and read once: the synchronous read (descriptor-anchored) serves both forms.
  await Promise.resolve();
  return loadConfigSync(home, options);
}

/** The synchronous form of {@link loadConfig}, with the same guarantees (for shutdown paths and CLIs). */
export function loadConfigSync(home: string, options?: LoadConfigOptions): LoadedConfig {
  const file = configPath(home, options);
  let bytes: Uint8Array | undefined;
  try {
    bytes = readConfigBytes(resolve(home), file, options);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return defaultLoaded(file);
    throw readError(file, error);
  }
  if (bytes === undefined) return defaultLoaded(file);
  return parseConfig(decode(file, bytes), file);
}
