import type { Command } from 'commander';
import { resolveHome } from '../lib/home.js';
import { colorsFor, printJson, println } from '../lib/output.js';
import { commonOptions, type CommonOptions, examples, setExit } from './common.js';

interface DoctorOptions extends CommonOptions {
  fix: boolean;
  dryRun: boolean;
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
    .option('--dry-run', 'show what --fix would change; change nothing', false);
  commonOptions(cmd);
  examples(cmd, [
    ['hermes-fs doctor', 'audit $HERMES_HOME (or ~/.hermes)'],
    ['hermes-fs doctor --home /var/lib/hermes/.hermes --dry-run', 'what --fix would change'],
    ['sudo hermes-fs doctor --home /var/lib/hermes/.hermes --fix', 'widen a legacy 0700 managed home to 2770'],
  ]);
  cmd.action(async (opts: DoctorOptions) => {
    const { runDoctor, doctorExitCode } = await import('../doctor/audit.js');
    const { renderDoctor } = await import('../doctor/render.js');
    const report = await runDoctor({ home: resolveHome(opts.home), fix: opts.fix, dryRun: opts.dryRun });
    if (opts.json) printJson(report);
    else println(renderDoctor(report, colorsFor(process.stdout)));
    setExit(doctorExitCode(report));
  });
}
