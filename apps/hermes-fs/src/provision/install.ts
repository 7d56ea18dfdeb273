/**
 * What `hermes-fs provision` generates for: one install of Hermes (its home, its owner, managed or not,
 * HERMES_HOME_MODE), validated once so that every generator can write the values into tmpfiles, unit and Nix
 * syntax without quoting or escaping them.
 */
import * as path from 'node:path';
import { formatMode, interpretManagedValue, parseHomeMode, type ParsedHomeMode } from '@hermes/fs-policy';
import { CliError, EXIT } from '../lib/output.js';

/** An install, as the generators see it. */
export interface InstallSpec {
  /** The home: absolute, normalised, no trailing slash. */
  readonly home: string;
  /** The service user and group (names or numeric ids). */
  readonly user: string;
  readonly group: string;
  readonly managed: boolean;
  /** The manager's name, written into HERMES_MANAGED and the `.managed` marker (managed only). */
  readonly manager: string;
  /** HERMES_HOME_MODE as the runtime will parse it (`source: 'default'` when unset; never set when managed). */
  readonly homeMode: ParsedHomeMode;
  /** The systemd service name, without `.service`. */
  readonly service: string;
}

/** The raw options of a provision command. */
export interface InstallInput {
  readonly home?: string | undefined;
  readonly user?: string | undefined;
  readonly group?: string | undefined;
  readonly managed?: boolean | undefined;
  readonly unmanaged?: boolean | undefined;
  readonly manager?: string | undefined;
  readonly homeMode?: string | undefined;
  readonly service?: string | undefined;
}

export const DEFAULT_HOME = '/var/lib/hermes';
export const DEFAULT_USER = 'hermes';
export const DEFAULT_SERVICE = 'hermes';

// Characters that are literal in every output: tmpfiles (whitespace, quotes, backslash escapes and `%`
// specifiers are special), unit files (`%` specifiers, quotes, `$` expansion in Environment=) and Nix strings
// (`"`, `\`, `${`). Anything else is refused rather than escaped three different ways.
const SAFE_PATH = /^\/(?:[A-Za-z0-9._@+-]+\/?)*$/;
// useradd's portable names (and systemd's), or a numeric id.
const SAFE_ID = /^(?:[a-z_][a-z0-9_-]{0,30}|\d{1,10})$/;
const SAFE_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const SAFE_SERVICE = /^[A-Za-z0-9][A-Za-z0-9:_.@-]{0,200}$/;

function usage(message: string, hint: string): CliError {
  return new CliError(message, { hint, exitCode: EXIT.error });
}

/** Validates the options of a provision command; throws a usage error (exit 2) naming the bad value. */
export function installFrom(input: InstallInput, defaults: { manager: string }): InstallSpec {
  if (input.managed === true && input.unmanaged === true) {
    throw usage('--managed and --unmanaged contradict each other', 'pass one of them (default: --managed)');
  }
  const managed = input.unmanaged !== true;
  const rawHome = input.home ?? DEFAULT_HOME;
  if (!path.isAbsolute(rawHome)) throw usage(`--home must be an absolute path, not ${JSON.stringify(rawHome)}`, 'e.g. --home /var/lib/hermes');
  const home = path.posix.normalize(rawHome).replace(/(?<=.)\/+$/, '');
  if (home === '/') throw usage('--home / is never a Hermes home', 'e.g. --home /var/lib/hermes');
  if (!SAFE_PATH.test(home) || home.split('/').some((c) => c === '..' || c === '.')) {
    throw usage(
      `--home ${JSON.stringify(rawHome)} has characters the generated files would have to escape`,
      'use letters, digits and . _ @ + - in the path (no spaces, quotes, % or $)',
    );
  }
  const user = input.user ?? DEFAULT_USER;
  const group = input.group ?? user;
  for (const [flag, value] of [['--user', user], ['--group', group]] as const) {
    if (!SAFE_ID.test(value)) throw usage(`${flag} ${JSON.stringify(value)} is not a valid user or group name`, 'a name such as hermes, or a numeric id');
  }
  const manager = input.manager ?? defaults.manager;
  if (!SAFE_NAME.test(manager)) throw usage(`--manager ${JSON.stringify(manager)} is not a valid manager name`, 'e.g. nixos, systemd');
  if (managed && !interpretManagedValue(manager).managed) {
    throw usage(`--manager ${manager} means "not managed" to the runtime`, 'pass --unmanaged, or name the package manager (e.g. nixos)');
  }
  const service = input.service ?? DEFAULT_SERVICE;
  if (!SAFE_SERVICE.test(service) || service.endsWith('.service')) {
    throw usage(`--service ${JSON.stringify(service)} is not a valid unit name`, 'a name without .service, e.g. hermes');
  }
  let homeMode = parseHomeMode(undefined);
  if (input.homeMode !== undefined) {
    if (managed) {
      throw usage('--home-mode applies to unmanaged installs only', 'on a managed install the package manager owns directory modes (HERMES_HOME_MODE is ignored there)');
    }
    homeMode = parseHomeMode(input.homeMode);
    if (homeMode.rejected) throw usage(homeMode.warnings.join('; '), 'pass an octal mode that keeps the owner rwx, e.g. --home-mode 0701');
  }
  return { home, user, group, managed, manager, homeMode, service };
}

/** The value of HERMES_MANAGED the generated service sets. */
export function managedValue(spec: Pick<InstallSpec, 'managed' | 'manager'>): string {
  return spec.managed ? spec.manager : 'false';
}

/** One sentence describing the install, for the headers of the generated files. */
export function describeInstall(spec: InstallSpec): string {
  const mode = spec.managed
    ? `managed by ${spec.manager}`
    : `unmanaged, HERMES_HOME_MODE${spec.homeMode.source === 'env' ? `=${formatMode(spec.homeMode.mode)}` : ' unset'}`;
  return `home ${spec.home}, owner ${spec.user}:${spec.group}, ${mode}`;
}
