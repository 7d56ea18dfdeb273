import { type Command, InvalidArgumentError, Option } from 'commander';
import { colorsFor, EXIT, printJson, println } from '../lib/output.js';
import { outputWidth } from '../lib/term.js';
import { MATRIX_ARTIFACTS, type MatrixArtifact } from '../matrix/scenarios.js';
import { actsAs, examples, runAction } from './common.js';

interface MatrixOptions {
  only?: MatrixArtifact[];
  crossUid: boolean;
}

export function registerMatrix(program: Command): void {
  const cmd = program
    .command('matrix')
    .summary('measure the permission matrix live (S1–S5 × every artifact)')
    .description(
      'Writes every artifact through its package\'s real API in fresh temp homes under the five scenarios of docs/permissions.md ' +
        '(one child process per scenario, each with its own umask), measures directory and file modes with lstat and ' +
        'compares them with the literal expected table. Run as root, it adds cross-uid rows with two real throwaway ' +
        'users (created and removed by the command, also when it is interrupted: Ctrl-C or SIGTERM stop the children, ' +
        'wait for them, then remove the users; a user that cannot be removed is named). Temp homes are always removed. ' +
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
    .option('--no-cross-uid', 'skip the cross-uid rows (and the throwaway users) even when running as root');
  actsAs(cmd, 'invoker');
  examples(cmd, [
    ['hermes-fs matrix', 'the full table; exit 0 when every cell matches docs/permissions.md'],
    ['hermes-fs matrix --only pending-messages --json', 'one artifact, as JSON (schema/matrix.schema.json)'],
    ['sudo hermes-fs matrix', 'adds the cross-uid rows (real throwaway users)'],
    ['sudo hermes-fs matrix --no-cross-uid', 'as root, without creating users'],
  ]);
  cmd.action((opts: MatrixOptions) =>
    runAction(cmd, { command: 'matrix', home: false }, async (ctx) => {
      const { runMatrix } = await import('../matrix/run.js');
      const { renderMatrix } = await import('../matrix/render.js');
      const report = await runMatrix({
        ...(opts.only === undefined ? {} : { only: opts.only }),
        noCrossUid: !opts.crossUid,
        handleSignals: true,
      });
      if (ctx.json) printJson(report);
      else println(renderMatrix(report, colorsFor(process.stdout), outputWidth()));
      return report.ok ? EXIT.ok : EXIT.findings;
    }),
  );
}
