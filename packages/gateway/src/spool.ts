import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { type HermesEnvironment, kindDir, loadEnvironment } from '@hermes/fs-policy';

/** The artifact kind of the spool directory and its payload files in @hermes/fs-policy's registry. */
export const SPOOL_KIND = 'pending-messages';

export interface SpoolLocationOptions {
  /** The Hermes home (profile homes included). Defaults to `env.home`, else HERMES_HOME. */
  home?: string;
  /** The resolved fs-policy environment; loaded (for `home`) when omitted. */
  env?: HermesEnvironment;
}

export interface SpoolLocation {
  readonly env: HermesEnvironment;
  readonly home: string;
  /** `<home>/pending_messages`. */
  readonly dir: string;
}

export function spoolLocation(options: SpoolLocationOptions = {}): SpoolLocation {
  const env = options.env ?? loadEnvironment(options.home === undefined ? {} : { home: options.home });
  const home = path.resolve(options.home ?? env.home);
  return { env, home, dir: kindDir(SPOOL_KIND, { home }) };
}

/** True when `home` is `<root>/profiles/<name>` (a named profile). */
export function isProfileHome(home: string): boolean {
  return path.basename(path.dirname(home)) === 'profiles';
}

let names = Buffer.alloc(0);
let lastDir = '';
let lastPrefix = '';
let namesAt = 0;

/**
 * A fresh spool file path: `pending-<32 lowercase hex>.json` (128 random bits). The random bits are drawn 256
 * names at a time: a stop plans up to 100,000 names and one CSPRNG call each cost a third of its planning.
 */
export function newPayloadPath(dir: string): string {
  if (namesAt + 16 > names.length) {
    names = randomBytes(16 * 256);
    namesAt = 0;
  }
  const hex = names.toString('hex', namesAt, namesAt + 16);
  namesAt += 16;
  // A stop plans every name in one spool: the directory is normalised once, not once per name.
  if (dir !== lastDir) {
    lastDir = dir;
    lastPrefix = path.join(dir, 'pending-');
  }
  return `${lastPrefix}${hex}.json`;
}
