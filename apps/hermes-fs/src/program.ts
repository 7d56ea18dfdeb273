import { Command, CommanderError } from 'commander';
import { registerDoctor } from './commands/doctor.js';
import { registerMatrix } from './commands/matrix.js';
import { registerPending } from './commands/pending.js';
import { registerProvision } from './commands/provision.js';
import { registerSave } from './commands/save.js';
import { EXIT_CODES_HELP } from './commands/common.js';
import { EXIT, reportError } from './lib/output.js';
import { VERSION } from './version.js';

export function buildProgram(): Command {
  const program = new Command('hermes-fs')
    .description(
      'Operator CLI for Hermes homes: the live permission matrix, a doctor that audits and repairs a home, ' +
        'salvage of the shutdown spool, and session export.',
    )
    .version(VERSION, '-V, --version')
    .showSuggestionAfterError()
    .showHelpAfterError('hint: add --help for usage and examples')
    .configureOutput({
      outputError: (text, write) => {
        write(`hermes-fs: ${text}`);
      },
    })
    .exitOverride();
  registerMatrix(program);
  registerDoctor(program);
  registerPending(program);
  registerSave(program);
  registerProvision(program);
  program.addHelpText(
    'after',
    `\nExamples:\n  $ hermes-fs matrix                      # measure S1–S5 live\n  $ hermes-fs doctor --home ~/.hermes     # audit a home\n  $ hermes-fs pending list                # the shutdown spool\n  $ hermes-fs save --session 20250101_x   # export a session\n\nEvery command takes --home, --json, --debug and --help.\n${EXIT_CODES_HELP}\n`,
  );
  // Subcommands report usage errors through the same override (exit 2).
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

/** Runs the CLI; resolves to the exit code (never throws). */
export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  const debug = argv.includes('--debug');
  if (argv.length <= 2) {
    program.outputHelp();
    return EXIT.error;
  }
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander printed its message already; help and --version are successes.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') {
        return EXIT.ok;
      }
      return EXIT.error;
    }
    return reportError(err, debug);
  }
}
