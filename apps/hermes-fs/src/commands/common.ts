import type { SaveFormat } from '@hermes/cli';
import type { Command } from 'commander';
import { actingIdentity } from '../lib/acting-uid.js';
import { type Actor, ownerToActAs, runAsOwner, verifyActingHome } from '../lib/act-as-owner.js';
import { checkHome, resolveHome } from '../lib/home.js';
import { CliError, EXIT, type ExitCode, reportError, setColorFlag, stderrLine } from '../lib/output.js';

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

/** Which uid each command acts as, for the program's help (docs/acting-uid.md has the full table). */
export const ACTS_AS_HELP = [
  'Acts as (run by root on a home another uid owns):',
  "  pending list|show|recover|export|prune   the home's owner: uid, gid and groups",
  "  save                                     the home's owner: uid, gid and groups",
  '  doctor                                   root (mode and owner repairs, through descriptors)',
  '  matrix, provision                        the invoking uid (they read no home)',
  'Run by any other uid (or on a root-owned home), every command acts as that uid.',
].join('\n');

/** The identity classes of the commands: content (owner), repairs (root), no home (invoker, printer). */
export type ActsAs = 'owner' | 'root' | 'invoker' | 'printer';

const ACTS_AS_TEXT: Readonly<Record<ActsAs, string>> = {
  owner:
    "Acts as: the home's owner. Run by root on a home another uid owns, it checks the path to the home, then\n" +
    "re-runs itself with the owner's uid, gid and groups before it reads or writes anything there: a link that a\n" +
    'group member planted leads only where the owner could go anyway (docs/acting-uid.md).',
  root: 'Acts as: the invoking uid; run by root it stays root, and its mode and owner repairs go through\ndescriptors.',
  invoker: 'Acts as: the invoking uid (it reads no Hermes home).',
  printer: 'Acts as: the invoking uid (it prints configuration; it reads and writes nothing in a home).',
};

/** Adds the "Acts as" paragraph to a command's help (before its examples). */
export function actsAs(cmd: Command, who: ActsAs): Command {
  return cmd.addHelpText('after', `\n${ACTS_AS_TEXT[who]}`);
}

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
 *
 * `actor: 'owner'` (content commands): run by root on a home another uid owns, the body does not run here —
 * the home's path is checked, the command is re-run as the home's owner (see lib/act-as-owner.ts) and its exit
 * code is this run's. In that re-run process the home is the one root checked, verified again.
 */
export async function runAction(
  cmd: Command,
  spec: { readonly command: string; readonly home: boolean; readonly actor?: Actor },
  body: (ctx: RunContext) => Promise<ExitCode> | ExitCode,
): Promise<void> {
  const g = globalsOf(cmd);
  setColorFlag(g.color);
  let code: number;
  try {
    let home = '';
    const acting = actingIdentity();
    if (spec.home && acting !== undefined) {
      home = verifyActingHome(acting);
      checkHome(home);
      if (g.debug) debugIdentity(acting);
    } else if (spec.home) {
      home = resolveHome(g.home);
      checkHome(home);
      const owner = ownerToActAs(home, spec.actor ?? 'invoker');
      if (owner !== undefined) {
        process.exitCode = await runAsOwner(owner, { debug: g.debug });
        return;
      }
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

/** `--debug` in the re-run process: the identity it runs with, as the kernel reports it. */
function debugIdentity(acting: NonNullable<ReturnType<typeof actingIdentity>>): void {
  const v = acting.verified;
  stderrLine(`hermes-fs: debug: running as the home's owner: uid ${String(v.uid)}, euid ${String(v.euid)}, gid ${String(v.gid)}, egid ${String(v.egid)}, groups ${v.groups.join(',')}`);
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
