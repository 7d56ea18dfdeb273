import type { SaveFormat } from '@hermes/cli';
import type { Command } from 'commander';
import { checkHome, resolveHome } from '../lib/home.js';
import { CliError, EXIT, type ExitCode, reportError, setColorFlag } from '../lib/output.js';

/** The snapshot formats of @hermes/cli, as the commands offer them. */
export const FORMAT_CHOICES: readonly SaveFormat[] = ['md', 'json', 'html'];

/** `pending recover` shows a progress bar (stderr, TTY only) above this many files. */
export const PROGRESS_THRESHOLD = 1000;

/** The options every command takes; declared once on the program, so they work before or after the command. */
export interface GlobalOptions {
  readonly home?: string;
  readonly json: boolean;
  readonly debug: boolean;
  readonly color?: boolean;
}

/** What an action runs with: the checked home (for commands that read one) and the output mode. */
export interface RunContext {
  /** `pending list`, `doctor`, …: the `command` of its JSON documents. */
  readonly command: string;
  readonly json: boolean;
  readonly debug: boolean;
  /** The home, resolved and checked (exists, a directory, readable); empty for commands without a home. */
  readonly home: string;
}

export const EXIT_CODES_HELP = [
  'Exit codes (every command):',
  '  0  success',
  '  1  findings or failures: a matrix mismatch, doctor findings, a failed save or',
  '     export, .bad files or store errors after recover',
  '  2  could not run: bad usage, a missing or unusable home, a missing state.db,',
  '     an unexpected error (with --json: the error document on stdout)',
].join('\n');

/** Adds the examples (and the exit codes) under the command's help. */
export function examples(cmd: Command, list: readonly (readonly [string, string])[]): Command {
  const width = Math.max(...list.map(([c]) => c.length));
  const lines = list.map(([c, what]) => `  $ ${c.padEnd(width)}   # ${what}`);
  return cmd.addHelpText('after', `\nExamples:\n${lines.join('\n')}\n\n${EXIT_CODES_HELP}\n`);
}

/** The global options as they apply to `cmd`, and whether `--home` was given on the command line. */
export function globalsOf(cmd: Command): GlobalOptions & { readonly homeGiven: boolean } {
  const all = cmd.optsWithGlobals<{ home?: string; json?: boolean; debug?: boolean; color?: boolean }>();
  let root: Command = cmd;
  while (root.parent !== null) root = root.parent;
  return {
    ...(all.home === undefined ? {} : { home: all.home }),
    json: all.json === true,
    debug: all.debug === true,
    ...(all.color === undefined ? {} : { color: all.color }),
    homeGiven: root.getOptionValueSource('home') === 'cli',
  };
}

/**
 * Runs a command's body with the shared contract: the global options applied, the one home check (exit 2 for
 * a missing or unusable home), every failure reported as one line plus a hint (and, with --json, the error
 * document on stdout), and the body's exit code set.
 */
export async function runAction(
  cmd: Command,
  spec: { readonly command: string; readonly home: boolean },
  body: (ctx: RunContext) => Promise<ExitCode> | ExitCode,
): Promise<void> {
  const g = globalsOf(cmd);
  setColorFlag(g.color);
  let code: ExitCode;
  try {
    let home = '';
    if (spec.home) {
      home = resolveHome(g.home);
      checkHome(home);
    } else if (g.homeGiven) {
      throw new CliError(`${spec.command} does not use a Hermes home: it measures fresh temporary homes only`, {
        code: 'EUSAGE',
        hint: `run it without --home: hermes-fs ${spec.command}`,
        exitCode: EXIT.error,
      });
    }
    code = await body({ command: spec.command, json: g.json, debug: g.debug, home });
  } catch (err) {
    code = reportError(err, { debug: g.debug, json: g.json, command: spec.command });
  }
  process.exitCode = code;
}

/** A usage error (exit 2) raised by a command after commander's own checks. */
export function usageError(message: string, hint?: string): CliError {
  return new CliError(message, { code: 'EUSAGE', exitCode: EXIT.error, ...(hint === undefined ? {} : { hint }) });
}

/** The extensions a snapshot name may have, by format (as @hermes/cli reads them). */
const EXTENSIONS: Readonly<Record<SaveFormat, readonly string[]>> = { json: ['.json'], md: ['.md', '.markdown'], html: ['.html', '.htm'] };

/**
 * The format of `--output NAME` and `--format`: the extension decides when `--format` is absent; when both are
 * given they must agree; a name without one of the snapshot extensions is refused (it would write JSON into
 * `x.pdf`). Throws a usage error (exit 2).
 */
export function formatOf(output: string | undefined, format: SaveFormat | undefined, fallback: SaveFormat): SaveFormat {
  if (output === undefined) return format ?? fallback;
  const lower = output.toLowerCase();
  const byExt = (Object.keys(EXTENSIONS) as SaveFormat[]).find((f) => EXTENSIONS[f].some((ext) => lower.endsWith(ext)));
  if (byExt === undefined) {
    const want = format === undefined ? '.md, .json or .html' : EXTENSIONS[format].join(' or ');
    throw usageError(`--output ${output}: the name must end in ${want}`, `e.g. --output incident${EXTENSIONS[format ?? fallback][0] ?? '.json'}`);
  }
  if (format !== undefined && format !== byExt) {
    throw usageError(`--output ${output} names a ${byExt} file but --format is ${format}`, `drop --format, or name the file *${EXTENSIONS[format][0] ?? ''}`);
  }
  return byExt;
}
