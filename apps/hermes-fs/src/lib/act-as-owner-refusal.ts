/** How the re-run process reports that it could not start as the home's owner (exit 2, nothing was done). */
import type { ActingRefusal } from './acting-uid.js';
import { CliError, EXIT, type ExitCode, reportError } from './output.js';

/** The command words of `argv` (`pending list`), for the error document; options and their values skipped. */
function commandWords(argv: readonly string[]): string {
  const words: string[] = [];
  const known: Readonly<Record<string, readonly string[]>> = { pending: ['list', 'show', 'recover', 'export', 'prune'], save: [] };
  for (const arg of argv.slice(2)) {
    if (words.length === 0 && Object.hasOwn(known, arg)) words.push(arg);
    else if (words.length === 1 && (known[words[0] ?? ''] ?? []).includes(arg)) {
      words.push(arg);
      break;
    }
  }
  return words.length === 0 ? 'hermes-fs' : words.join(' ');
}

/** Prints the refusal (one line and the fix; with --json the error document) and returns exit code 2. */
export function refuseStart(refusal: ActingRefusal, argv: readonly string[]): ExitCode {
  const err = new CliError(refusal.message, { code: refusal.code, hint: refusal.hint, exitCode: EXIT.error });
  return reportError(err, { debug: argv.includes('--debug'), json: argv.includes('--json'), command: commandWords(argv) });
}
