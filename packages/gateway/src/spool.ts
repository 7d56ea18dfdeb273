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

/** A fresh spool file path: `pending-<32 lowercase hex>.json` (128 random bits). */
export function newPayloadPath(dir: string): string {
  return path.join(dir, `pending-${randomBytes(16).toString('hex')}.json`);
}
