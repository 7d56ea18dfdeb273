import * as path from 'node:path';
import { expandTilde, type EnvSource } from '@hermes/fs-policy';
import { MoaTraceConfigError } from './errors.js';

/** The default trace directory, relative to the home. */
export const DEFAULT_TRACE_DIR = 'moa-traces';

const VAR_RE = /\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))/gu;
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/u;

/**
 * Expands `$NAME` and `${NAME}` from `vars`. A variable that is unset or empty is an error
 * (`EUNSET_VAR`): substituting nothing would turn `$AUDIT/moa` into `/moa`, and keeping the text would
 * create a directory literally named `$AUDIT`. `${…}` without a plain name (`${A:-b}`, `${`) is `EBAD_VAR`.
 * A `$` not followed by a name or `{` is kept as it is.
 */
export function expandVars(input: string, vars: EnvSource): string {
  if (/\$\{(?![^}]*\})/u.test(input)) {
    throw new MoaTraceConfigError('EBAD_VAR', `moa trace_dir ${JSON.stringify(input)}: unterminated \${ (write \${NAME})`);
  }
  return input.replace(VAR_RE, (_match, braced: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare ?? '';
    if (!NAME_RE.test(name)) {
      throw new MoaTraceConfigError(
        'EBAD_VAR',
        `moa trace_dir ${JSON.stringify(input)}: \${${name}} is not a plain variable reference (write \${NAME})`,
      );
    }
    const value = vars[name];
    if (value === undefined || value === '') {
      throw new MoaTraceConfigError(
        'EUNSET_VAR',
        `moa trace_dir ${JSON.stringify(input)}: environment variable ${name} is not set (or empty); ` +
          'set it, or write the directory out',
      );
    }
    return value;
  });
}

/**
 * The absolute trace directory: `traceDir` with `$VAR`/`${VAR}` and then a leading `~` expanded, a relative
 * result resolved under the home; `null`, `undefined` or a blank string → `<home>/moa-traces`.
 */
export function resolveTraceDir(traceDir: string | null | undefined, home: string, vars: EnvSource = process.env): string {
  if (traceDir === null || traceDir === undefined || traceDir.trim() === '') return path.join(home, DEFAULT_TRACE_DIR);
  return path.resolve(home, expandTilde(expandVars(traceDir, vars), vars));
}
