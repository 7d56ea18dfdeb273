import * as path from 'node:path';
import { expandTilde, resolveHermesHome } from '@hermes/fs-policy';

/** `--home DIR` (with `~` expanded), else HERMES_HOME, else `~/.hermes` — resolved by @hermes/fs-policy. */
export function resolveHome(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (option !== undefined && option.trim() !== '') return path.resolve(expandTilde(option.trim(), env));
  return resolveHermesHome(env);
}
