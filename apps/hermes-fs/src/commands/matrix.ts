import { type Command, InvalidArgumentError, Option } from 'commander';
import { colorsFor, EXIT, printJson, println } from '../lib/output.js';
import { outputWidth } from '../lib/term.js';
import { MATRIX_ARTIFACTS, type MatrixArtifact } from '../matrix/scenarios.js';
import { actsAs, examples, runAction } from './common.js';

interface MatrixOptions {
  only?: MatrixArtifact[];
  crossUid?: boolean;
}

export function registerMatrix(program: Command): void {
  const cmd = program
    .command('matrix')
    .summary('measure the permission matrix live (S1–S5 × every artifact)')
    .description(
      'Writes every artifact through its package\'s real API in fresh temp homes under the five scenarios of docs/permissions.md ' +
        '(one child process per scenario, each with its own umask), measures directory and file modes with lstat and ' +
        'compares them with the literal expected table. Asked with --cross-uid and run as root, it adds cross-uid rows ' +
        'with two real throwaway users (created and removed by the command, also when it is interrupted: Ctrl-C or ' +
        'SIGTERM stop the children, wait for them, then remove the users; a user that cannot be removed is named); ' +
        'without --cross-uid it creates no account and reports those rows as skipped. Temp homes are always removed. ' +
        'It reads no Hermes home: --home is refused. Exit 0 only when every cell matches.',
    )
    .addOption(
      new Option('--only <kind>', 'measure only this artifact (repeatable)')
        .choices(MATRIX_ARTIFACTS)
        .argParser((value: string, previous: MatrixArtifact[] | undefined) => {
          const kind = MATRIX_ARTIFACTS.find((a) => a === value);
          if (kind === undefined) throw new InvalidArgumentError(`Allowed choices are ${MATRIX_ARTIFACTS.join(', ')}.`);
          return [...(previous ?? []), kind];
        }),
    )
    .option('--cross-uid', 'as root: add the cross-uid rows, creating (and removing) two throwaway users and a group')
    .option('--no-cross-uid', 'no cross-uid rows and no accounts (the default, spelled out)');
  actsAs(cmd, 'invoker');
  examples(cmd, [
    ['hermes-fs matrix', 'the full table; exit 0 when every cell matches docs/permissions.md'],
    ['hermes-fs matrix --only pending-messages --json', 'one artifact, as JSON (schema/matrix.schema.json)'],
    ['sudo hermes-fs matrix --cross-uid', 'adds the cross-uid rows (creates and removes throwaway users)'],
  ]);
  cmd.action((opts: MatrixOptions) =>
    runAction(cmd, { command: 'matrix', home: false }, async (ctx) => {
      const { runMatrix } = await import('../matrix/run.js');
      const { renderMatrix } = await import('../matrix/render.js');
      const report = await runMatrix({
        ...(opts.only === undefined ? {} : { only: opts.only }),
        crossUid: opts.crossUid === true,
        handleSignals: true,
      });
      if (ctx.json) printJson(report);
      else println(renderMatrix(report, colorsFor(process.stdout), outputWidth()));
      return report.ok ? EXIT.ok : EXIT.findings;
    }),
  );
}
