/**
 * `hermes-fs provision systemd`: the service settings the policy assumes, as a unit or a drop-in.
 * Every mode comes from @hermes/fs-policy's registry (the home's from the directory plan, the umask from
 * MANAGED_INSTALL); the stop timeout from the shutdown flush budget of @hermes/config (and the gateway's rule
 * for its synchronous budget), the exit status of a complete SIGTERM stop from @hermes/gateway.
 */
import { defaultConfig } from '@hermes/config';
import { formatMode, MANAGED_INSTALL } from '@hermes/fs-policy';
import { signalExitCode } from '@hermes/gateway';
import { describeInstall, type InstallSpec, managedValue } from './install.js';
import { directoryPlan } from './plan.js';

/**
 * Time a stop needs beyond the gateway's two budgets: the signal reaches its handler only when the event loop
 * is free (it may be finishing a synchronous step), and the process still exits after the last write.
 */
export const STOP_MARGIN_MS = 5000;

/** The signal the gateway's shutdown hook flushes on, which systemd must send first. */
export const STOP_SIGNAL = 'SIGTERM';

/**
 * The gateway's stop takes at most two budgets (@hermes/gateway installShutdownHook, docs/stop-contract.md):
 * `ms` for the asynchronous flush, then `syncMs` for writing synchronously what it left.
 */
export interface FlushBudget {
  readonly ms: number;
  /** `--flush-budget-ms`, or the default of `gateway.shutdown_flush_budget_ms` (@hermes/config). */
  readonly source: 'option' | 'config-default';
  readonly syncMs: number;
  /** `--sync-budget-ms`, or the hook's rule for an unset `syncBudgetMs`: the same as the flush budget. */
  readonly syncSource: 'option' | 'flush-budget';
}

/** The budgets the service runs with, from the options or the defaults the gateway is configured with. */
export function flushBudget(optionMs: number | undefined, syncOptionMs?: number): FlushBudget {
  const ms = optionMs ?? defaultConfig().gateway.shutdownFlushBudgetMs;
  return {
    ms,
    source: optionMs === undefined ? 'config-default' : 'option',
    syncMs: syncOptionMs ?? ms,
    syncSource: syncOptionMs === undefined ? 'flush-budget' : 'option',
  };
}

/** `TimeoutStopSec=` in whole seconds: both budgets plus {@link STOP_MARGIN_MS}, rounded up. */
export function stopTimeoutSec(budget: Pick<FlushBudget, 'ms' | 'syncMs'>): number {
  return Math.ceil((budget.ms + budget.syncMs + STOP_MARGIN_MS) / 1000);
}

/** The header line that says where `TimeoutStopSec=` comes from. */
export function stopTimeoutNote(budget: FlushBudget): string {
  const flush = budget.source === 'option' ? '--flush-budget-ms' : 'gateway.shutdown_flush_budget_ms default';
  const sync = budget.syncSource === 'option' ? '--sync-budget-ms' : 'as the flush budget';
  return (
    `TimeoutStopSec = flush budget ${String(budget.ms)} ms (${flush}) + synchronous budget ${String(budget.syncMs)} ms (${sync}) ` +
    `+ ${String(STOP_MARGIN_MS)} ms margin.`
  );
}

export interface UnitSetting {
  readonly section: 'Unit' | 'Service' | 'Install';
  readonly key: string;
  readonly value: string;
}

export interface UnitOptions {
  /** A full unit with this `ExecStart=`; without it, a drop-in for an existing unit. */
  readonly execStart?: string | undefined;
  readonly budget: FlushBudget;
}

/** `StateDirectory=` takes a path below /var/lib; a home elsewhere has none (tmpfiles creates it). */
export function stateDirectoryOf(home: string): string | null {
  const prefix = '/var/lib/';
  return home.startsWith(prefix) && home.length > prefix.length ? home.slice(prefix.length) : null;
}

/** The home's mode for this install, from the directory plan (the `home` kind). */
export function homeModeOf(spec: InstallSpec): number {
  const home = directoryPlan({ managed: spec.managed, homeMode: spec.homeMode }).find((d) => d.rel === '');
  if (home === undefined) throw new Error('the directory plan has no entry for the home (registry kind "home" missing)');
  return home.mode;
}

/** The settings, in the order they are written. */
export function unitSettings(spec: InstallSpec, options: UnitOptions): readonly UnitSetting[] {
  const full = options.execStart !== undefined;
  const out: UnitSetting[] = [];
  const add = (section: UnitSetting['section'], key: string, value: string): void => {
    out.push({ section, key, value });
  };
  if (full) add('Unit', 'Description', `Hermes gateway (${spec.home})`);
  if (full) add('Service', 'Type', 'simple');
  if (options.execStart !== undefined) add('Service', 'ExecStart', options.execStart);
  add('Service', 'User', spec.user);
  add('Service', 'Group', spec.group);
  if (spec.managed) add('Service', 'UMask', formatMode(MANAGED_INSTALL.umask));
  const stateDir = stateDirectoryOf(spec.home);
  if (stateDir !== null) {
    add('Service', 'StateDirectory', stateDir);
    add('Service', 'StateDirectoryMode', formatMode(homeModeOf(spec)));
  }
  add('Service', 'Environment', `HERMES_HOME=${spec.home}`);
  add('Service', 'Environment', `HERMES_MANAGED=${managedValue(spec)}`);
  if (!spec.managed && spec.homeMode.source === 'env') add('Service', 'Environment', `HERMES_HOME_MODE=${formatMode(spec.homeMode.mode)}`);
  add('Service', 'ReadWritePaths', spec.home);
  add('Service', 'KillSignal', STOP_SIGNAL);
  add('Service', 'TimeoutStopSec', `${String(stopTimeoutSec(options.budget))}s`);
  add('Service', 'SuccessExitStatus', String(signalExitCode(STOP_SIGNAL)));
  if (full) add('Install', 'WantedBy', 'multi-user.target');
  return out;
}

/** Where the output is installed: the unit itself, or a drop-in next to the existing unit. */
export function unitInstallPath(spec: InstallSpec, full: boolean): string {
  return full ? `/etc/systemd/system/${spec.service}.service` : `/etc/systemd/system/${spec.service}.service.d/50-hermes-fs.conf`;
}

/** The unit (or drop-in) text. */
export function renderUnit(spec: InstallSpec, options: UnitOptions): string {
  const full = options.execStart !== undefined;
  const settings = unitSettings(spec, options);
  const lines = [
    `# Generated by \`hermes-fs provision systemd\` from the @hermes/fs-policy registry; regenerate, do not edit.`,
    `# ${describeInstall(spec)}.`,
    `# Install as ${unitInstallPath(spec, full)}.`,
    `# ${stopTimeoutNote(options.budget)}`,
  ];
  for (const section of ['Unit', 'Service', 'Install'] as const) {
    const inSection = settings.filter((s) => s.section === section);
    if (inSection.length === 0) continue;
    lines.push('', `[${section}]`, ...inSection.map((s) => `${s.key}=${s.value}`));
  }
  return `${lines.join('\n')}\n`;
}
