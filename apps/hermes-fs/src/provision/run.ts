/**
 * The provision commands as data: each returns the document `--json` prints, whose `text` is the file the
 * command prints without `--json`. Described by schema/provision.schema.json.
 */
import { formatMode, registryData, type RegistryData } from '@hermes/fs-policy';
import { CliError, EXIT } from '../lib/output.js';
import { installFrom, type InstallInput, type InstallSpec } from './install.js';
import { type NixosFragment, nixosFragment, renderNixos } from './nixos.js';
import { type FlushBudget, flushBudget, renderUnit, STOP_MARGIN_MS, unitInstallPath, type UnitSetting, unitSettings } from './systemd.js';
import { renderTmpfiles, type TmpfilesLine, tmpfilesLines } from './tmpfiles.js';

export interface InstallJson {
  readonly home: string;
  readonly user: string;
  readonly group: string;
  readonly managed: boolean;
  readonly manager: string | null;
  /** HERMES_HOME_MODE as the runtime sees it, or null when unset. */
  readonly homeMode: string | null;
  readonly service: string;
}

export interface ProvisionTmpfilesDocument {
  readonly schemaVersion: 1;
  readonly command: 'provision tmpfiles';
  readonly install: InstallJson;
  readonly lines: readonly TmpfilesLine[];
  readonly text: string;
}

export interface ProvisionSystemdDocument {
  readonly schemaVersion: 1;
  readonly command: 'provision systemd';
  readonly install: InstallJson;
  readonly unit: { readonly type: 'unit' | 'drop-in'; readonly installPath: string };
  readonly flushBudget: FlushBudget;
  readonly stopMarginMs: number;
  readonly settings: readonly UnitSetting[];
  readonly text: string;
}

export interface ProvisionNixosDocument {
  readonly schemaVersion: 1;
  readonly command: 'provision nixos';
  readonly install: InstallJson;
  readonly flushBudget: FlushBudget;
  readonly stopMarginMs: number;
  readonly fragment: NixosFragment;
  readonly text: string;
}

export interface ProvisionRegistryDocument {
  readonly schemaVersion: 1;
  readonly command: 'provision registry';
  readonly registry: RegistryData;
  readonly text: string;
}

function installJson(spec: InstallSpec): InstallJson {
  return {
    home: spec.home,
    user: spec.user,
    group: spec.group,
    managed: spec.managed,
    manager: spec.managed ? spec.manager : null,
    homeMode: spec.homeMode.source === 'env' ? formatMode(spec.homeMode.mode) : null,
    service: spec.service,
  };
}

/** The tmpfiles.d configuration of an install. */
export function provisionTmpfiles(input: InstallInput): ProvisionTmpfilesDocument {
  const spec = installFrom(input, { manager: 'systemd' });
  return { schemaVersion: 1, command: 'provision tmpfiles', install: installJson(spec), lines: tmpfilesLines(spec), text: renderTmpfiles(spec) };
}

export interface SystemdInput extends InstallInput {
  readonly execStart?: string | undefined;
  readonly flushBudgetMs?: number | undefined;
  readonly syncBudgetMs?: number | undefined;
}

/** The service unit (with `execStart`) or drop-in of an install. */
export function provisionSystemd(input: SystemdInput): ProvisionSystemdDocument {
  const spec = installFrom(input, { manager: 'systemd' });
  if (input.execStart !== undefined && (input.execStart.trim() === '' || /[\n\r]/.test(input.execStart))) {
    throw new CliError('--exec-start must be one non-empty command line', { hint: 'e.g. --exec-start "/usr/bin/hermes gateway"', exitCode: EXIT.error });
  }
  const budget = flushBudget(input.flushBudgetMs, input.syncBudgetMs);
  const options = { execStart: input.execStart, budget };
  const full = input.execStart !== undefined;
  return {
    schemaVersion: 1,
    command: 'provision systemd',
    install: installJson(spec),
    unit: { type: full ? 'unit' : 'drop-in', installPath: unitInstallPath(spec, full) },
    flushBudget: budget,
    stopMarginMs: STOP_MARGIN_MS,
    settings: unitSettings(spec, options),
    text: renderUnit(spec, options),
  };
}

/** The NixOS module fragment of an install. */
export function provisionNixos(input: SystemdInput): ProvisionNixosDocument {
  const spec = installFrom(input, { manager: 'nixos' });
  const budget = flushBudget(input.flushBudgetMs, input.syncBudgetMs);
  return {
    schemaVersion: 1,
    command: 'provision nixos',
    install: installJson(spec),
    flushBudget: budget,
    stopMarginMs: STOP_MARGIN_MS,
    fragment: nixosFragment(spec, budget),
    text: renderNixos(spec, budget),
  };
}

function registryText(data: RegistryData): string {
  const rows = [['kind', 'directory', 'dir mode', 'HERMES_HOME_MODE', 'reconciled', 'file', 'managed file', 'managed max']];
  for (const k of data.kinds) {
    rows.push([
      k.name,
      k.dir === null ? '(caller)' : k.dir === '' ? '(home)' : `${k.dir}/`,
      k.dirMode,
      k.honoursHomeMode ? 'honoured' : '-',
      k.reconciledWhenUnmanaged ? 'unmanaged' : '-',
      k.file.mode,
      k.file.managedMode,
      k.file.managedMaxMode,
    ]);
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  const table = rows.map((r) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
  return [
    ...table,
    '',
    `managed install: directories ${data.managed.dirMode}, service umask ${data.managed.umask}, marker ${data.managed.marker.name} ${data.managed.marker.mode}`,
    `standard subdirectories: ${data.standardSubdirs.join(', ')}; default directory mode ${data.defaultDirMode}`,
    '',
  ].join('\n');
}

/** The registry as data, for other tools. */
export function provisionRegistry(): ProvisionRegistryDocument {
  const data = registryData();
  return { schemaVersion: 1, command: 'provision registry', registry: data, text: registryText(data) };
}
