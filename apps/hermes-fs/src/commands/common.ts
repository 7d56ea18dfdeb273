import type { SaveFormat } from '@hermes/cli';
import type { Command } from 'commander';
import type { ExitCode } from '../lib/output.js';

/** The snapshot formats of @hermes/cli, as the commands offer them. */
export const FORMAT_CHOICES: readonly SaveFormat[] = ['md', 'json', 'html'];

/** `pending recover` shows a progress bar (stderr, TTY only) above this many files. */
export const PROGRESS_THRESHOLD = 1000;

export interface CommonOptions {
  home?: string;
  json: boolean;
  debug: boolean;
}

/** `--home`, `--json` and `--debug`, on every command. */
export function commonOptions(cmd: Command, text: { home?: string } = {}): Command {
  return cmd
    .option('--home <dir>', text.home ?? 'the Hermes home (default: $HERMES_HOME, else ~/.hermes)')
    .option('--json', 'print one JSON document on stdout instead of text', false)
    .option('--debug', 'print stack traces on errors', false);
}

export const EXIT_CODES_HELP = 'Exit codes: 0 success · 1 findings (mismatch, problems found, save failed) · 2 error (usage, unreadable home, unexpected failure)';

/** Adds the examples (and the exit codes) under the command's help. */
export function examples(cmd: Command, list: readonly (readonly [string, string])[]): Command {
  const width = Math.max(...list.map(([c]) => c.length));
  const lines = list.map(([c, what]) => `  $ ${c.padEnd(width)}   # ${what}`);
  return cmd.addHelpText('after', `\nExamples:\n${lines.join('\n')}\n\n${EXIT_CODES_HELP}\n`);
}

export function setExit(code: ExitCode): void {
  process.exitCode = code;
}
