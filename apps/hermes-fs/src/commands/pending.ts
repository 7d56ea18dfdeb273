import { type Command, InvalidArgumentError, Option } from 'commander';
import type { ExportOptions, PruneOptions } from '../pending/actions.js';
import { commonOptions, type CommonOptions, examples, FORMAT_CHOICES, PROGRESS_THRESHOLD } from './common.js';

function registerList(pending: Command): void {
  const cmd = pending
    .command('list')
    .description(
      'Lists every spool file in recovery order (ts, seq, name): payloads, agent-history snapshots, .bad files ' +
        '(rows state.db rejected), files another uid owns, and unparseable files.',
    );
  commonOptions(cmd);
  examples(cmd, [
    ['hermes-fs pending list', 'the spool of $HERMES_HOME'],
    ['hermes-fs pending list --home /var/lib/hermes/.hermes --json', 'as JSON'],
  ]);
  cmd.action(async (opts: CommonOptions) => {
    const { listAction } = await import('../pending/actions.js');
    listAction(opts);
  });
}

function registerShow(pending: Command): void {
  const cmd = pending
    .command('show')
    .argument('<id>', 'the id from `pending list` (a unique prefix of 4+ characters is enough) or the file name')
    .description('Prints one spool file: where it came from, its status and its full payload.');
  commonOptions(cmd);
  examples(cmd, [['hermes-fs pending show 3f2a9c', 'one payload, by id prefix']]);
  cmd.action(async (id: string, opts: CommonOptions) => {
    const { showAction } = await import('../pending/actions.js');
    showAction(id, opts);
  });
}

function registerExport(pending: Command): void {
  const cmd = pending
    .command('export')
    .argument('<id>', 'an agent-history snapshot id from `pending list`')
    .description(
      'Turns an agent-history snapshot (history a shutdown could not persist, never replayed automatically) into a ' +
        'readable transcript through @hermes/cli: written to <home>/sessions/saved/ (0600, atomic), or printed with --stdout.',
    )
    .addOption(new Option('--format <format>', 'transcript format').choices(FORMAT_CHOICES).default('md'))
    .option('--output <name>', 'file name inside <home>/sessions/saved/')
    .option('--redact', 'mask secrets in the transcript (@hermes/redact)', false)
    .option('--stdout', 'print the transcript instead of saving it', false);
  commonOptions(cmd);
  examples(cmd, [
    ['hermes-fs pending export 3f2a9c --format md', 'Markdown transcript in sessions/saved/'],
    ['hermes-fs pending export 3f2a9c --format html --redact', 'self-contained HTML, secrets masked'],
    ['hermes-fs pending export 3f2a9c --stdout | less', 'read it without writing anything'],
  ]);
  cmd.action(async (id: string, opts: ExportOptions) => {
    const { exportAction } = await import('../pending/actions.js');
    await exportAction(id, opts);
  });
}

function registerRecover(pending: Command): void {
  const cmd = pending
    .command('recover')
    .description(
      'Replays the spool into <home>/state.db through @hermes/gateway recoverPending: exactly once (a receipt is ' +
        'committed with the rows), in (ts, seq, name) order, each file on its own. Rows state.db rejects are renamed ' +
        '.bad; agent-history snapshots and other uids\' payloads are left in place. Shows a progress bar on a TTY ' +
        `when more than ${PROGRESS_THRESHOLD} files wait.`,
    );
  commonOptions(cmd);
  examples(cmd, [
    ['hermes-fs pending recover', 'replay into $HERMES_HOME/state.db'],
    ['sudo -u hermes hermes-fs pending recover --home /var/lib/hermes/.hermes', 'as the uid that owns the payloads'],
  ]);
  cmd.action(async (opts: CommonOptions) => {
    const { recoverAction } = await import('../pending/actions.js');
    recoverAction(opts);
  });
}

function registerPrune(pending: Command): void {
  const cmd = pending
    .command('prune')
    .description(
      'Deletes .bad files, agent-history snapshots and stale temp files older than a number of days (default: ' +
        'gateway.pending.bad_retention_days / snapshot_retention_days from config.yaml, else 30). Payloads recovery ' +
        'can still deliver are never pruned. Nothing the runtime could not deliver is deleted silently: every removed ' +
        'file is listed.',
    )
    .addOption(
      new Option('--older-than <days>', 'only files older than this many days (0: all of them)').argParser((v: string) => {
        const n = Number(v);
        if (!Number.isFinite(n) || n < 0 || v.trim() === '') throw new InvalidArgumentError('expected a number of days >= 0, e.g. 30');
        return n;
      }),
    )
    .option('--dry-run', 'list what would be deleted; delete nothing', false);
  commonOptions(cmd);
  examples(cmd, [
    ['hermes-fs pending prune --dry-run', 'what the retention settings would delete'],
    ['hermes-fs pending prune --older-than 7', 'delete .bad files and snapshots older than a week'],
  ]);
  cmd.action(async (opts: PruneOptions) => {
    const { pruneAction } = await import('../pending/actions.js');
    await pruneAction(opts);
  });
}

export function registerPending(program: Command): void {
  const pending = program
    .command('pending')
    .summary('the shutdown spool (pending_messages/): list, show, recover, export, prune')
    .description(
      'The operator\'s view of <home>/pending_messages/, where the gateway spools messages it could not deliver ' +
        'before it stopped. Salvage flow: list -> show -> recover (payloads) / export (agent-history snapshots) -> prune.',
    );
  examples(pending, [
    ['hermes-fs pending list', 'what is waiting'],
    ['hermes-fs pending recover', 'replay payloads into state.db'],
    ['hermes-fs pending export 3f2a9c --format md', 'salvage an agent-history snapshot'],
  ]);
  registerList(pending);
  registerShow(pending);
  registerRecover(pending);
  registerExport(pending);
  registerPrune(pending);
}
