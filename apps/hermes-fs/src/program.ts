import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { registerDoctor } from './commands/doctor.js';
import { registerMatrix } from './commands/matrix.js';
import { registerPending } from './commands/pending.js';
import { registerProvision } from './commands/provision.js';
import { registerSave } from './commands/save.js';
import { ACTS_AS_HELP, EXIT_CODES_HELP } from './commands/common.js';
import { setInvocation } from './lib/act-as-owner.js';
import { CliError, EXIT, installStreamGuards, printJson, errorDocument, reportError, stdoutExitCode } from './lib/output.js';
import { VERSION } from './version.js';

export function buildProgram(): Command {
  const program = new Command('hermes-fs')
    .description(
      'Operator CLI for Hermes homes: the live permission matrix, a doctor that audits and repairs a home, ' +
        'salvage of the shutdown spool, and session export.',
    )
    .version(VERSION, '-V, --version')
    .option('--home <dir>', 'the Hermes home (default: $HERMES_HOME, else ~/.hermes); before or after the command')
    .option('--json', 'print one JSON document on stdout instead of text (schemas: hermes-fs/schema/*)', false)
    .option('--debug', 'print stack traces on errors', false)
    .addOption(new Option('--color', 'colour even when stdout is not a terminal'))
    .addOption(new Option('--no-color', 'never colour (as NO_COLOR=1)'))
    .showSuggestionAfterError()
    .showHelpAfterError('hint: add --help for usage and examples')
    .configureHelp({ showGlobalOptions: true })
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
    `\nExamples:\n  $ hermes-fs matrix                      # measure S1–S5 live\n  $ hermes-fs --home ~/.hermes doctor     # audit a home\n  $ hermes-fs pending list                # the shutdown spool (newest 50)\n  $ hermes-fs save --session 20250101_x   # export a session\n\nEvery command takes --home, --json, --debug, --color/--no-color and --help.\n\n${ACTS_AS_HELP}\n\n${EXIT_CODES_HELP}\n`,
  );
  // Subcommands report usage errors through the same override (exit 2).
  const override = (cmd: Command): void => {
    cmd.exitOverride();
    cmd.configureOutput({ outputError: (text, write) => { write(`hermes-fs: ${text}`); } });
    refuseEmptyValues(cmd);
    for (const sub of cmd.commands) override(sub);
  };
  refuseEmptyValues(program);
  for (const cmd of program.commands) override(cmd);
  return program;
}

/**
 * Every option that takes a value refuses an empty one (exit 2, a usage error): `--home "$H"` with `$H` unset
 * must not mean "the default home". The option's own parser, if any, runs after the check.
 */
function refuseEmptyValues(cmd: Command): void {
  for (const opt of cmd.options) {
    if (!opt.required && !opt.optional) continue;
    const parse = opt.parseArg;
    opt.argParser((value: string, previous: unknown) => {
      if (value.trim() === '') {
        throw new InvalidArgumentError(`it is empty (a variable that is not set?)${opt.long === '--home' ? '; an empty --home never means the default home' : ''}`);
      }
      return parse === undefined ? value : parse(value, previous);
    });
  }
}

/** The command words of `argv` (`pending list`), for the `command` of an error document. */
function commandOf(program: Command, argv: readonly string[]): string {
  const words: string[] = [];
  let cmd: Command = program;
  for (const arg of argv.slice(2)) {
    if (arg.startsWith('-')) continue;
    const sub: Command | undefined = cmd.commands.find((c) => c.name() === arg);
    if (sub === undefined) break;
    words.push(arg);
    cmd = sub;
  }
  return words.length === 0 ? 'hermes-fs' : words.join(' ');
}

/** The usage error of a bare group: which commands it has, for the `--json` error document. */
function missingCommand(program: Command, argv: readonly string[]): CliError {
  const words = commandOf(program, argv);
  let cmd: Command = program;
  for (const w of words === 'hermes-fs' ? [] : words.split(' ')) cmd = cmd.commands.find((c) => c.name() === w) ?? cmd;
  const subs = cmd.commands.map((c) => c.name()).filter((n) => n !== 'help');
  const full = words === 'hermes-fs' ? 'hermes-fs' : `hermes-fs ${words}`;
  return new CliError(`${full} needs a command: ${subs.join(', ')}`, { code: 'EUSAGE', exitCode: EXIT.error, hint: `${full} --help for usage and examples` });
}

/**
 * Runs the CLI; resolves to the exit code (never throws). A bare `hermes-fs` or command group without a
 * subcommand prints its help on stderr and exits 2, like every other usage error.
 */
export async function main(argv: readonly string[]): Promise<number> {
  installStreamGuards();
  setInvocation(argv);
  const program = buildProgram();
  const json = argv.includes('--json');
  const debug = argv.includes('--debug');
  process.exitCode = undefined;
  let code: number;
  try {
    await program.parseAsync(argv);
    code = typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander printed its message already; help asked for (`--help`, `help`) and --version are successes.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || (err.code === 'commander.help' && err.exitCode === 0)) {
        code = EXIT.ok;
      } else if (err.code === 'commander.help') {
        // A bare `hermes-fs` or group (`hermes-fs pending`): commander printed the help on stderr; a usage error.
        code = EXIT.error;
        if (json) printJson(errorDocument(commandOf(program, argv), missingCommand(program, argv), EXIT.error));
      } else {
        code = EXIT.error;
        if (json) {
          const usage = new CliError(err.message.replace(/^error: /, ''), { code: 'EUSAGE', exitCode: EXIT.error, hint: 'add --help for usage and examples' });
          printJson(errorDocument(commandOf(program, argv), usage, EXIT.error));
        }
      }
    } else {
      code = reportError(err, { debug, json, command: commandOf(program, argv) });
    }
  }
  return stdoutExitCode() ?? code;
}
