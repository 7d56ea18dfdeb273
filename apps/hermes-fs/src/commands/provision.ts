import { type Command, Help, InvalidArgumentError } from 'commander';
import { colorsFor, EXIT, printJson, println, reportError, setColorFlag } from '../lib/output.js';
import { outputWidth } from '../lib/term.js';
import { DEFAULT_HOME, DEFAULT_SERVICE, DEFAULT_USER } from '../provision/install.js';
import { actsAs, examples, globalsOf } from './common.js';

interface InstallOptions {
  home?: string;
  user?: string;
  group?: string;
  managed?: boolean;
  unmanaged?: boolean;
  manager?: string;
  homeMode?: string;
  service?: string;
}

interface SystemdOptions extends InstallOptions {
  execStart?: string;
  flushBudgetMs?: number;
  syncBudgetMs?: number;
}

function positiveInteger(value: string): number {
  if (!/^\d{1,9}$/.test(value) || Number(value) === 0) throw new InvalidArgumentError('expected a positive whole number of milliseconds');
  return Number(value);
}

/**
 * Runs a generator with the global options applied and the shared error contract (exit 2, error document).
 * `--home`, `--json` and `--debug` are the program's global options (before or after the command); here
 * `--home` names the home of the install being described — a path on the target machine, which need not exist
 * here — so it is not checked like the other commands' home, and its default is the NixOS module's.
 */
function generate(cmd: Command, command: string, body: (home: string, json: boolean) => void): void {
  const g = globalsOf(cmd);
  setColorFlag(g.color);
  try {
    body(g.home ?? DEFAULT_HOME, g.json);
    process.exitCode = EXIT.ok;
  } catch (err) {
    process.exitCode = reportError(err, { debug: g.debug, json: g.json, command });
  }
}

/** The options every generator shares: which install it is for. */
function installOptions(cmd: Command, manager: string): Command {
  cmd
    .option('--user <name>', 'the service user (name or uid)', DEFAULT_USER)
    .option('--group <name>', 'the service group (default: the user)')
    .option('--managed', 'a package manager owns the home, shared with the service group (the default)')
    .option('--unmanaged', 'a single-user install: owner-only directories')
    .option('--manager <name>', `the manager's name for HERMES_MANAGED and the .managed marker (default: ${manager})`)
    .option('--home-mode <mode>', 'unmanaged: HERMES_HOME_MODE for the kinds that honour it, e.g. 0701')
    .option('--service <name>', 'the systemd service name, without .service', DEFAULT_SERVICE);
  return cmd;
}

function print(doc: { text: string }, json: boolean): void {
  if (json) printJson(doc);
  else process.stdout.write(doc.text);
}

export function registerProvision(program: Command): void {
  const provision = program
    .command('provision')
    .summary('generate tmpfiles.d, the systemd unit and the NixOS module from the fs-policy registry')
    .description(
      'Prints what a package manager and a service manager need to provide a Hermes home, generated from the same ' +
        '@hermes/fs-policy registry the runtime enforces and the doctor audits: no mode is written by hand.',
    );
  // The program's --home help names the runtime's default (~/.hermes); a generator describes an install on the
  // target machine and uses DEFAULT_HOME instead. Set before the subcommands, which inherit it.
  const base = new Help();
  provision.configureHelp({
    showGlobalOptions: true,
    optionDescription: (option) =>
      option.long === '--home'
        ? `the home of the install described (default: ${DEFAULT_HOME}; $HERMES_HOME is not read); before or after the command`
        : base.optionDescription(option),
  });
  actsAs(provision, 'printer');
  examples(provision, [
    ['hermes-fs provision tmpfiles > /etc/tmpfiles.d/hermes.conf', 'managed home /var/lib/hermes, owner hermes'],
    ['hermes-fs provision systemd --exec-start "/usr/bin/hermes gateway"', 'a full service unit'],
    ['hermes-fs provision nixos > hermes-fs.nix', 'the NixOS module fragment'],
    ['hermes-fs provision registry --json', 'the registry as data'],
  ]);

  const tmpfiles = installOptions(
    provision
      .command('tmpfiles')
      .description(
        'A tmpfiles.d(5) configuration: a d line per directory kind with the registry\'s mode and the owner (applied on ' +
          'creation; an existing directory keeps its own), a z line where the runtime itself reconciles an existing ' +
          'directory, and on a managed install the .managed marker.',
      ),
    'systemd',
  );
  actsAs(tmpfiles, 'printer');
  examples(tmpfiles, [
    ['hermes-fs provision tmpfiles --home /var/lib/hermes --user hermes --group hermes', 'managed (2770, setgid)'],
    ['hermes-fs provision tmpfiles --unmanaged --home-mode 0701', 'single-user, HERMES_HOME_MODE=0701'],
  ]);
  tmpfiles.action(async (opts: InstallOptions) => {
    const { provisionTmpfiles } = await import('../provision/run.js');
    generate(tmpfiles, 'provision tmpfiles', (home, json) => {
      print(provisionTmpfiles({ ...opts, home }), json);
    });
  });

  const systemd = installOptions(
    provision
      .command('systemd')
      .description(
        'The service settings the policy assumes: User=/Group=, UMask=0007 on a managed install, StateDirectory=/' +
          'StateDirectoryMode= for a home under /var/lib, HERMES_HOME/HERMES_MANAGED, ReadWritePaths=, and a stop timeout ' +
          'sized from the shutdown budgets. A full unit with --exec-start, else a drop-in for an existing unit.',
      ),
    'systemd',
  )
    .option('--exec-start <command>', 'write a full unit with this ExecStart= (default: a drop-in)')
    .option('--flush-budget-ms <ms>', 'the gateway\'s shutdown flush budget (default: gateway.shutdown_flush_budget_ms\'s default)', positiveInteger)
    .option('--sync-budget-ms <ms>', 'the hook\'s syncBudgetMs, if the gateway sets one (default: the flush budget)', positiveInteger);
  actsAs(systemd, 'printer');
  examples(systemd, [
    ['hermes-fs provision systemd > /etc/systemd/system/hermes.service.d/50-hermes-fs.conf', 'a drop-in'],
    ['hermes-fs provision systemd --exec-start "/usr/bin/hermes gateway" --flush-budget-ms 15000', 'a full unit'],
  ]);
  systemd.action(async (opts: SystemdOptions) => {
    const { provisionSystemd } = await import('../provision/run.js');
    generate(systemd, 'provision systemd', (home, json) => {
      print(provisionSystemd({ ...opts, home }), json);
    });
  });

  const nixos = installOptions(
    provision
      .command('nixos')
      .description('A NixOS module fragment (systemd.tmpfiles.rules, systemd.services.<service>) with the same values; see docs/nixos.md.'),
    'nixos',
  ).option('--flush-budget-ms <ms>', 'the gateway\'s shutdown flush budget (default: gateway.shutdown_flush_budget_ms\'s default)', positiveInteger)
    .option('--sync-budget-ms <ms>', 'the hook\'s syncBudgetMs, if the gateway sets one (default: the flush budget)', positiveInteger);
  actsAs(nixos, 'printer');
  examples(nixos, [
    ['hermes-fs provision nixos > /etc/nixos/hermes-fs.nix', 'managed home /var/lib/hermes'],
    ['hermes-fs provision nixos --home /var/lib/hermes/.hermes --service hermes-agent', 'another home and service'],
  ]);
  nixos.action(async (opts: SystemdOptions) => {
    const { provisionNixos } = await import('../provision/run.js');
    generate(nixos, 'provision nixos', (home, json) => {
      print(provisionNixos({ ...opts, home }), json);
    });
  });

  const registry = provision.command('registry').description('The @hermes/fs-policy registry: every artifact kind with its modes, as a table or (--json) as data.');
  actsAs(registry, 'printer');
  examples(registry, [
    ['hermes-fs provision registry', 'a table'],
    ['hermes-fs provision registry --json | jq .registry.kinds', 'as data'],
  ]);
  registry.action(async () => {
    const { provisionRegistry } = await import('../provision/run.js');
    const { renderRegistry } = await import('../provision/registry-table.js');
    generate(registry, 'provision registry', (_home, json) => {
      const doc = provisionRegistry();
      // A table that fits the output's width (COLUMNS); the document's `text` is that table, uncoloured.
      if (json) printJson({ ...doc, text: `${renderRegistry(doc.registry, outputWidth(), (s: string) => s).join('\n')}\n` });
      else println(renderRegistry(doc.registry, outputWidth(), colorsFor(process.stdout).bold).join('\n'));
    });
  });
}
