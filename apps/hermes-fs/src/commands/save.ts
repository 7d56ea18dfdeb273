import type { SaveFormat } from '@hermes/cli';
import { type Command, Option } from 'commander';
import { actsAs, examples, FORMAT_CHOICES, runAction } from './common.js';

export interface SaveCommandOptions {
  session: string;
  format?: SaveFormat;
  redact: boolean;
  output?: string;
}

export function registerSave(program: Command): void {
  const cmd = program
    .command('save')
    .summary('export a session from state.db as a /save snapshot')
    .description(
      'Reads one session from <home>/state.db (@hermes/session-db exportSession, read-only) and writes it to ' +
        '<home>/sessions/saved/ through @hermes/cli saveConversation: atomic, 0600, never clobbering another snapshot ' +
        'unless --output names it. The --output extension (.md, .json, .html) decides the format, or must agree with ' +
        '--format. Failures print "(x_x) Failed to save: <reason>" (with the errno: a missing state.db and one this ' +
        'uid may not read are told apart) and exit 1.',
    )
    .requiredOption('--session <id>', 'the session id (see `hermes-fs pending list` or your session list)')
    .addOption(new Option('--format <format>', 'snapshot format (default json, or the --output extension)').choices(FORMAT_CHOICES))
    .option('--redact', 'mask secrets in every string of the snapshot (@hermes/redact)', false)
    .option('--output <name>', 'file name inside <home>/sessions/saved/ (replaces an existing file of that name)');
  actsAs(cmd, 'owner');
  examples(cmd, [
    ['hermes-fs save --session 20250101_120000_ab12cd', 'JSON snapshot, default name'],
    ['hermes-fs save --session 20250101_120000_ab12cd --format md --redact', 'readable Markdown, secrets masked'],
    ['hermes-fs save --session 20250101_120000_ab12cd --output incident.html', 'self-contained HTML, chosen name'],
  ]);
  cmd.action((opts: SaveCommandOptions) =>
    runAction(cmd, { command: 'save', home: true, actor: 'owner' }, async (ctx) => {
      const { saveAction } = await import('../actions/save.js');
      return saveAction(ctx, opts);
    }),
  );
}
