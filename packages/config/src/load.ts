import { resolve } from 'node:path';
import { FsPolicyError, readRegularFile, readRegularFileSync } from '@hermes/fs-policy';
import { ConfigError } from './errors.js';
import { defaultLoaded, parseConfig, type LoadedConfig } from './parse.js';

/** Options of {@link loadConfig} and {@link loadConfigSync}. */
export interface LoadConfigOptions {
  /** The config file: absolute, or relative to `home`. Default `config.yaml`. */
  readonly file?: string;
}

function configPath(home: string, options: LoadConfigOptions | undefined): string {
  if (home === '') throw new TypeError('@hermes/config: home must be a non-empty path');
  return resolve(home, options?.file ?? 'config.yaml');
}

/**
 * How config files are read: following a link (NixOS links config.yaml into the store), never blocking (a FIFO
 * or socket planted under the name is refused before any read), at most 4 MiB.
 */
const READ = { follow: true, maxBytes: 4 * 1024 * 1024 } as const;

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
 * failure — unreadable file, a FIFO/socket/device in its place (refused without blocking), a file over 4 MiB,
 * invalid UTF-8, invalid YAML, a non-mapping top level, invalid values —
 * rejects with a {@link ConfigError} naming the absolute file path; otherwise the result is exactly
 * {@link parseConfig}'s for the file's text. `home` is used as given (resolved against the working
 * directory, no `~` expansion) and nothing is written or created.
 */
export async function loadConfig(home: string, options?: LoadConfigOptions): Promise<LoadedConfig> {
  const file = configPath(home, options);
  let bytes: Uint8Array;
  try {
    bytes = (await readRegularFile(file, READ)).data;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return defaultLoaded(file);
    throw readError(file, error);
  }
  return parseConfig(decode(file, bytes), file);
}

/** The synchronous form of {@link loadConfig}, with the same guarantees (for shutdown paths and CLIs). */
export function loadConfigSync(home: string, options?: LoadConfigOptions): LoadedConfig {
  const file = configPath(home, options);
  let bytes: Uint8Array;
  try {
    bytes = readRegularFileSync(file, READ).data;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return defaultLoaded(file);
    throw readError(file, error);
  }
  return parseConfig(decode(file, bytes), file);
}
