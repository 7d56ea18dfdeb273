import type { Command } from 'commander';
import { colorsFor, printJson, println } from '../lib/output.js';
import { actsAs, examples, runAction, usageError } from './common.js';

interface DoctorOptions {
  fix: boolean;
  dryRun: boolean;
  managed?: boolean;
  unmanaged?: boolean;
  allowLink: string[];
  failOn: string;
  tmpfiles?: string;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function registerDoctor(program: Command): void {
  const cmd = program
    .command('doctor')
    .summary('audit a Hermes home against the fs-policy registry; --fix repairs')
    .description(
      'Audits a real home: directory modes and owners per artifact kind, managed directories missing group rwx or ' +
        'setgid, group- or world-readable secret files, symlinks that leave the home, leftover temp files, and the ' +
        'shutdown spool against its limits. Every finding names the path, what is wrong and the exact fix. --fix applies ' +
        'the safe fixes through @hermes/fs-policy and reports every change; --dry-run shows them and changes nothing.',
    )
    .option('--fix', 'apply the safe fixes (directory modes through fs-policy reconcileDir, stale temp files)', false)
    .option('--dry-run', 'show what --fix would change; change nothing', false)
    .option('--managed', 'this home is a managed (NixOS) install, whatever the environment says (sudo drops HERMES_MANAGED)')
    .option('--unmanaged', 'this home is a single-user install: the only way to let --fix tighten a setgid group-shared directory')
    .option('--tmpfiles <file>', 'the installed tmpfiles.d configuration (hermes-fs provision tmpfiles): managed evidence after the marker')
    .option('--allow-link <prefix>', 'links into this prefix are legitimate (repeatable; default /nix/store)', collect, [])
    .option('--fail-on <level>', 'what makes the exit code 1: error, or warning (errors and warnings)', 'warning');
  actsAs(cmd, 'root');
  examples(cmd, [
    ['hermes-fs doctor', 'audit $HERMES_HOME (or ~/.hermes)'],
    ['hermes-fs doctor --home /var/lib/hermes --dry-run', 'what --fix would change'],
    ['sudo hermes-fs doctor --managed --home /var/lib/hermes --fix', 'widen a legacy 0700 managed home to 2770'],
    ['hermes-fs doctor --fail-on error', 'exit 1 only for errors'],
    ['sudo hermes-fs doctor --home /var/lib/hermes --tmpfiles /etc/tmpfiles.d/hermes.conf', 'the installed configuration says managed or not'],
  ]);
  cmd.action((opts: DoctorOptions) =>
    runAction(cmd, { command: 'doctor', home: true }, async (ctx) => {
      if (opts.managed === true && opts.unmanaged === true) throw usageError('--managed and --unmanaged contradict each other', 'pass one of them');
      if (opts.failOn !== 'error' && opts.failOn !== 'warning') throw usageError(`--fail-on must be error or warning, not ${JSON.stringify(opts.failOn)}`);
      const { runDoctor, doctorExitCode } = await import('../doctor/audit.js');
      const { renderDoctor } = await import('../doctor/render.js');
      const report = await runDoctor({
        home: ctx.home,
        fix: opts.fix,
        dryRun: opts.dryRun,
        managed: opts.managed === true ? true : opts.unmanaged === true ? false : undefined,
        allowLinks: opts.allowLink.length > 0 ? opts.allowLink : undefined,
        failOn: opts.failOn,
        tmpfiles: opts.tmpfiles,
      });
      if (ctx.json) printJson(report);
      else println(renderDoctor(report, colorsFor(process.stdout)));
      return doctorExitCode(report, opts.failOn);
    }),
  );
}
