import * as fs from 'node:fs';
import * as path from 'node:path';
import { expandTilde, resolveHermesHome } from '@hermes/fs-policy';
import { CliError, EXIT } from './output.js';

/** `--home DIR` (with `~` expanded), else HERMES_HOME, else `~/.hermes` — resolved by @hermes/fs-policy. */
export function resolveHome(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (option !== undefined && option.trim() !== '') return path.resolve(expandTilde(option.trim(), env));
  return resolveHermesHome(env);
}

function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

const HOME_HINT = 'pass the home with --home DIR (before or after the command) or set HERMES_HOME';

/**
 * The one home check every command that reads a home makes before anything else: the home must exist, be a
 * directory, and be readable and searchable by this process. Anything else is an unusable home: a
 * {@link CliError} with exit code 2, the errno as its code and the home as its path.
 */
export function checkHome(home: string): void {
  let st: fs.Stats;
  try {
    st = fs.statSync(home);
  } catch (err) {
    const code = codeOf(err);
    const why =
      code === 'ENOENT'
        ? 'it does not exist'
        : code === 'EACCES'
          ? `a directory above it cannot be searched by uid ${euid()} (EACCES)`
          : code === 'ENOTDIR'
            ? 'a component of the path is not a directory (ENOTDIR)'
            : `stat failed (${code})`;
    throw new CliError(`cannot use the Hermes home ${home}: ${why}`, {
      code,
      path: home,
      hint: code === 'EACCES' ? 'run as the home\'s owner or root' : HOME_HINT,
      exitCode: EXIT.error,
      cause: err,
    });
  }
  if (!st.isDirectory()) {
    throw new CliError(`cannot use the Hermes home ${home}: not a directory`, { code: 'ENOTDIR', path: home, hint: HOME_HINT, exitCode: EXIT.error });
  }
  try {
    fs.accessSync(home, fs.constants.R_OK | fs.constants.X_OK);
  } catch (err) {
    const code = codeOf(err);
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    throw new CliError(`cannot use the Hermes home ${home}: uid ${euid()} may not read it (${code}; mode ${mode}, owner uid ${st.uid})`, {
      code,
      path: home,
      hint: `run as uid ${st.uid} (the home's owner), a member of its group when it is group-shared, or root`,
      exitCode: EXIT.error,
      cause: err,
    });
  }
}
