/**
 * The one generator function: which directories an install has, with which mode, and which of them are
 * brought back to that mode when they already exist — read from @hermes/fs-policy's registry, never restated.
 * `provision tmpfiles`, `provision nixos` and `hermes-fs doctor` all read it, so the doctor expects exactly
 * what the package manager creates.
 */
import {
  type ArtifactKind,
  dirModeFor,
  listKinds,
  MANAGED_INSTALL,
  type ManagedInfo,
  type ParsedHomeMode,
  reconcilesExistingDir,
} from '@hermes/fs-policy';

/** What the plan depends on: the install type and HERMES_HOME_MODE (unmanaged kinds that honour it). */
export interface InstallType {
  readonly managed: boolean;
  readonly homeMode: ParsedHomeMode;
}

/** One directory of the plan. */
export interface PlannedDir {
  /** The artifact kind that owns the directory. */
  readonly kind: string;
  /** Relative to the home; `''` is the home itself. */
  readonly rel: string;
  /** The mode it is created with. */
  readonly mode: number;
  /** True when an existing directory is brought back to `mode` (the runtime does the same). */
  readonly reconcile: boolean;
  /** Which registry field gave the mode. */
  readonly source: 'kind' | 'HERMES_HOME_MODE' | 'managed';
}

/**
 * The kinds that have a directory of their own under the home — the home first, every parent before its
 * children — in registry order otherwise. Kinds stored in the home itself (`state-db`, `secrets`) and kinds
 * whose directory the caller chooses have none.
 */
export function plannedKinds(): readonly ArtifactKind[] {
  const own = listKinds().filter((k) => k.dir !== null && (k.dir !== '' || k.name === 'home'));
  const depth = (k: ArtifactKind): number => (k.dir === '' || k.dir === null ? 0 : k.dir.split('/').length);
  return own.map((k, i) => ({ k, i })).sort((a, b) => depth(a.k) - depth(b.k) || a.i - b.i).map((x) => x.k);
}

/**
 * Every directory of an install with its mode: managed, the package manager's setgid group-shared mode for
 * each; unmanaged, the kind's mode, or HERMES_HOME_MODE for the kinds that honour it. `reconcile` marks the
 * directories the runtime itself brings back to policy when they exist (the home and the standard
 * subdirectories, unmanaged only).
 */
export function directoryPlan(install: InstallType): readonly PlannedDir[] {
  const managed: ManagedInfo = { managed: install.managed, system: null, source: 'env', raw: null };
  const env = { managed, homeMode: install.homeMode };
  return plannedKinds().map((kind) => {
    const unmanaged = dirModeFor(kind, env);
    const mode = unmanaged ?? MANAGED_INSTALL.dirMode;
    const source: PlannedDir['source'] =
      unmanaged === null ? 'managed' : kind.honoursHomeMode && install.homeMode.source === 'env' ? 'HERMES_HOME_MODE' : 'kind';
    return { kind: kind.name, rel: kind.dir ?? '', mode, reconcile: reconcilesExistingDir(kind, env), source };
  });
}
