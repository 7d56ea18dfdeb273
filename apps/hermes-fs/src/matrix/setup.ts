/**
 * Scenario set-up without a single permission call of our own: every mode a scenario needs beforehand (the
 * 2770 setgid home of a managed install, the 0750 directory of S4, a traversable temp root for the
 * cross-uid rows) is produced by @hermes/fs-policy itself, through a throwaway artifact kind whose
 * `dirMode` is the mode wanted, under an explicitly unmanaged environment. fs-policy's `secureMkdir` gives
 * every level it creates the kind's mode exactly (fd-based fchmod, so the umask cannot change it), and
 * `reconcileDir` brings an existing directory to it — the same primitives the runtime uses.
 */
import * as path from 'node:path';
import {
  type ArtifactKind,
  type HermesEnvironment,
  loadEnvironment,
  reconcileDirSync,
  secureMkdirSync,
} from '@hermes/fs-policy';

/** A set-up-only kind: "a directory of exactly `mode`", never managed, never chowned. */
export function setupKind(mode: number): ArtifactKind {
  return {
    name: `hermes-fs-setup-${mode.toString(8)}`,
    description: 'hermes-fs scenario set-up (a directory of an exact mode)',
    dir: null,
    dirMode: mode,
    honoursHomeMode: false,
    requiredWhenManaged: false,
    ownership: false,
    file: { mode: 0o600, managedMode: 0o600, managedMaxMode: 0o600, retighten: false, ceiling: 0o600, managedCeiling: 0o600, secret: false },
  };
}

/** An unmanaged environment rooted at `root`, independent of the process's HERMES_* variables. */
export function setupEnv(root: string): HermesEnvironment {
  return loadEnvironment({ home: root, env: {} });
}

/** Creates `dir` (and missing parents below `root`) with exactly `mode`; returns the measured mode. */
export function makeDirWithMode(root: string, dir: string, mode: number): number {
  return secureMkdirSync(dir, setupKind(mode), { env: setupEnv(root), root }).mode;
}

/** Brings an existing directory to exactly `mode` (e.g. a mkdtemp root to 0711 so other uids can traverse it). */
export function setDirMode(dir: string, mode: number): number | null {
  const r = reconcileDirSync(dir, setupKind(mode), { env: setupEnv(dir) });
  if (r.warnings.length > 0) throw new Error(r.warnings.join('; '));
  return r.after;
}

export function under(root: string, ...parts: string[]): string {
  return path.join(root, ...parts);
}
