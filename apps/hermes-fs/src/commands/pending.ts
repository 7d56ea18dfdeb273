import { type Command, InvalidArgumentError, Option } from 'commander';
import type { ExportOptions } from '../pending/show.js';
import { actsAs, examples, FORMAT_CHOICES, PROGRESS_THRESHOLD, runAction, usageError } from './common.js';

function nonNegativeInteger(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || v.trim() === '') throw new InvalidArgumentError('expected a whole number >= 0, e.g. 50');
  return n;
}

function registerList(pending: Command): void {
  const cmd = pending
    .command('list')
    .description(
      'Lists the spool in recovery order (ts, seq, name): the newest --limit files (default 50) in a table, and totals ' +
        'for all of them: payloads to deliver, complete payloads a killed writer left under temp names (recovery ' +
        'adopts them), partial writes, batch files, agent-history snapshots, .bad files (rows state.db rejected), other ' +
        'uids\' files, unreadable ones (a file nested too deeply is its own too-deep row), and symlinks, FIFOs and ' +
        'directories named like payloads (never opened). ' +
        'Message text, keys and names are shown with control characters escaped. --json streams every entry ' +
        '(directory order; with --limit N the newest N in recovery order) with the same names as @hermes/gateway listSpool.',
    )
    .addOption(new Option('--limit <n>', 'show the newest N files').argParser(nonNegativeInteger).default(50))
    .option('--all', 'show every file', false);
  actsAs(cmd, 'owner');
  examples(cmd, [
    ['hermes-fs pending list', 'the newest 50 files of $HERMES_HOME\'s spool, and totals'],
    ['hermes-fs pending list --all | less -S', 'every file'],
    ['hermes-fs pending list --home /var/lib/hermes --json', 'every entry as JSON (schema/pending-list.schema.json)'],
  ]);
  cmd.action((opts: { limit: number; all: boolean }) =>
    runAction(cmd, { command: 'pending list', home: true, actor: 'owner' }, async (ctx) => {
      const { listAction } = await import('../pending/list.js');
      return listAction(ctx, { limit: opts.limit, all: opts.all, limitGiven: cmd.getOptionValueSource('limit') === 'cli' });
    }),
  );
}

function registerShow(pending: Command): void {
  const cmd = pending
    .command('show')
    .argument('<id>', 'the id from `pending list` (a unique prefix of 4+ characters is enough) or the file name')
    .description('Prints one spool file: where it came from, its kind and its full payload (control characters escaped).');
  actsAs(cmd, 'owner');
  examples(cmd, [['hermes-fs pending show 3f2a9c', 'one payload, by id prefix']]);
  cmd.action((id: string) =>
    runAction(cmd, { command: 'pending show', home: true, actor: 'owner' }, async (ctx) => {
      const { showAction } = await import('../pending/show.js');
      return showAction(ctx, id);
    }),
  );
}

function registerExport(pending: Command): void {
  const cmd = pending
    .command('export')
    .argument('<id>', 'an agent-history snapshot id from `pending list`')
    .description(
      'Turns an agent-history snapshot (history a shutdown could not persist, never replayed automatically) into a ' +
        'readable transcript through @hermes/cli: written to <home>/sessions/saved/ (0600, atomic), or printed with --stdout. ' +
        'The --output extension decides the format, or must agree with --format. With --json: the saved file\'s path, ' +
        'mode and size (schema/pending-export.schema.json); with --stdout --json: one JSON document whose "transcript" ' +
        'is the transcript, exact, and nothing is written.',
    )
    .addOption(new Option('--format <format>', 'transcript format (default md, or the --output extension)').choices(FORMAT_CHOICES))
    .option('--output <name>', 'file name inside <home>/sessions/saved/ (.md, .json or .html)')
    .option('--redact', 'mask secrets in the transcript (@hermes/redact)', false)
    .option('--stdout', 'print the transcript instead of saving it', false);
  actsAs(cmd, 'owner');
  examples(cmd, [
    ['hermes-fs pending export 3f2a9c --format md', 'Markdown transcript in sessions/saved/'],
    ['hermes-fs pending export 3f2a9c --output incident.html --redact', 'self-contained HTML, secrets masked'],
    ['hermes-fs pending export 3f2a9c --stdout | less', 'read it without writing anything'],
    ['hermes-fs pending export 3f2a9c --stdout --json | jq -r .transcript', 'the transcript inside a JSON document'],
  ]);
  cmd.action((id: string, opts: ExportOptions) =>
    runAction(cmd, { command: 'pending export', home: true, actor: 'owner' }, async (ctx) => {
      const { exportAction } = await import('../pending/show.js');
      return exportAction(ctx, id, opts);
    }),
  );
}

function registerRecover(pending: Command): void {
  const cmd = pending
    .command('recover')
    .description(
      'Replays the spool into <home>/state.db through @hermes/gateway recoverPending: exactly once (a receipt is ' +
        'committed with the rows), in (ts, seq, name) order, each file on its own. Rows state.db rejects are renamed ' +
        '.bad; agent-history snapshots and other uids\' payloads are left in place. A missing state.db is refused ' +
        '(--create-db creates it, owned by the home\'s owner; as root on a managed home that is refused too). Shows a ' +
        `progress bar on a terminal when more than ${PROGRESS_THRESHOLD} files wait.`,
    )
    .option('--create-db', 'create an empty state.db when there is none', false);
  actsAs(cmd, 'owner');
  examples(cmd, [
    ['hermes-fs pending recover', 'replay into $HERMES_HOME/state.db'],
    ['sudo -u hermes hermes-fs pending recover --home /var/lib/hermes', 'as the uid that owns the payloads'],
  ]);
  cmd.action((opts: { createDb: boolean }) =>
    runAction(cmd, { command: 'pending recover', home: true, actor: 'owner' }, async (ctx) => {
      const { recoverAction } = await import('../pending/recover.js');
      return recoverAction(ctx, { createDb: opts.createDb });
    }),
  );
}

function registerPrune(pending: Command): void {
  const cmd = pending
    .command('prune')
    .description(
      'Shows — and with --yes deletes — .bad files, agent-history snapshots, .partial files and stale temp files ' +
        'that hold no message, older than a number of days (default: gateway.pending.bad_retention_days / ' +
        'snapshot_retention_days from config.yaml, else 30). Without --yes nothing changes (the same default as ' +
        '@hermes/gateway prune). Payloads recovery can still deliver are never pruned, under any name: --yes first ' +
        'adopts the complete payloads killed writers left under temp names, as recovery does, and keeps any temp ' +
        'that holds a complete message; every file adopted, kept or deleted is listed.',
    )
    .addOption(
      new Option('--older-than <days>', 'only files older than this many days (0: all of them)').argParser((v: string) => {
        const n = Number(v);
        if (!Number.isFinite(n) || n < 0 || v.trim() === '') throw new InvalidArgumentError('expected a number of days >= 0, e.g. 30');
        return n;
      }),
    )
    .option('--yes', 'delete the files (without it: a dry run)', false)
    .option('--dry-run', 'list what would be deleted; delete nothing (the default)', false);
  actsAs(cmd, 'owner');
  examples(cmd, [
    ['hermes-fs pending prune', 'what the retention settings would delete and adopt (nothing changes)'],
    ['hermes-fs pending prune --older-than 7 --yes', 'adopt complete temp payloads, then delete .bad, .partial files and snapshots older than a week'],
  ]);
  cmd.action((opts: { olderThan?: number; yes: boolean; dryRun: boolean }) =>
    runAction(cmd, { command: 'pending prune', home: true, actor: 'owner' }, async (ctx) => {
      if (opts.yes && opts.dryRun) throw usageError('--yes and --dry-run contradict each other', 'drop one of them');
      const { pruneAction } = await import('../pending/prune.js');
      return pruneAction(ctx, { yes: opts.yes, ...(opts.olderThan === undefined ? {} : { olderThan: opts.olderThan }) });
    }),
  );
}

export function registerPending(program: Command): void {
  const pending = program
    .command('pending')
    .summary('the shutdown spool (pending_messages/): list, show, recover, export, prune')
    .description(
      'The operator\'s view of <home>/pending_messages/, where the gateway spools messages it could not deliver ' +
        'before it stopped. Salvage flow: list -> show -> recover (payloads) / export (agent-history snapshots) -> prune.',
    );
  actsAs(pending, 'owner');
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
