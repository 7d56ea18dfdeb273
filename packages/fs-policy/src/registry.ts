import * as path from 'node:path';
import { DEFAULT_DIR_MODE, type HermesEnvironment } from './env.js';

/**
 * How a file of a kind is created and rewritten.
 * - `mode`: the exact mode of a new file on an unmanaged install.
 * - `managedMode`: the mode on a managed install; `'umask'` means 0660 minus the service umask
 *   (0660 under NixOS's `UMask=0007`), matching the activation script that grants the group rw; a
 *   permissive umask (022, 000) never gives others access.
 * - `retighten`: an overwrite resets the mode to the kind's; otherwise an existing file keeps the mode its
 *   owner chose.
 */
export interface FileRule {
  readonly mode: number;
  readonly managedMode: number | 'umask';
  /**
   * The loosest mode an existing file may have on a managed install before the doctor reports it: NixOS
   * activation grants the service group rw on state files (0660); others never get access.
   */
  readonly managedMaxMode: number;
  readonly retighten: boolean;
  /**
   * The widest mode an existing file may have for the runtime to write into it (append) or to carry its mode
   * over (replace): group/other write is never accepted — a file others can write may have been planted or
   * be read by them. The owner may widen read access (a trajectory made 0644 stays 0644).
   */
  readonly ceiling: number;
  /** The same on a managed install (state files: the service group may write). */
  readonly managedCeiling: number;
  /** Holds secrets or verbatim conversation content: group/world read is a finding for the doctor. */
  readonly secret: boolean;
}

/**
 * One artifact kind: a directory under the home and the files written into it.
 * - `dir`: the directory relative to the home (`''` is the home itself); null when the caller chooses it.
 * - `dirMode`: the mode of directories this package creates for the kind on an unmanaged install.
 * - `honoursHomeMode`: HERMES_HOME_MODE replaces `dirMode` (peers of the home such as sessions/, logs/).
 * - Managed installs: directories are created with no explicit mode (the setgid parent and the service
 *   umask decide) and existing directories are never tightened or widened by the runtime.
 * - `requiredWhenManaged`: the package manager creates it; the runtime refuses to invent it.
 * - `ownership`: HERMES_UID/HERMES_GID are applied to what this package creates.
 */
export interface ArtifactKind {
  readonly name: string;
  readonly description: string;
  readonly dir: string | null;
  readonly dirMode: number;
  readonly honoursHomeMode: boolean;
  readonly requiredWhenManaged: boolean;
  readonly ownership: boolean;
  readonly file: FileRule;
  /** Standard files of the kind, relative to its directory (for the doctor). */
  readonly files?: readonly string[];
}

// Verbatim transcripts (payloads, traces, trajectories) stay owner-only even when managed: each uid reads its own.
const SECRET_FILE: FileRule = { mode: 0o600, managedMode: 0o600, managedMaxMode: 0o600, retighten: false, ceiling: 0o755, managedCeiling: 0o755, secret: true };
// Credentials: NixOS installs .env and config.yaml 0640 for the service group.
const CREDENTIAL_FILE: FileRule = { mode: 0o600, managedMode: 0o600, managedMaxMode: 0o640, retighten: false, ceiling: 0o755, managedCeiling: 0o755, secret: true };
const SHARED_STATE: FileRule = { mode: 0o600, managedMode: 'umask', managedMaxMode: 0o660, retighten: false, ceiling: 0o755, managedCeiling: 0o775, secret: true };

function homeSubdir(name: string, dir: string, description: string, requiredWhenManaged: boolean): ArtifactKind {
  return {
    name,
    description,
    dir,
    dirMode: 0o700,
    honoursHomeMode: true,
    requiredWhenManaged,
    ownership: true,
    file: SHARED_STATE,
  };
}

/** Every artifact kind, by name. Adding a kind is one entry here; consumers and the doctor read this table. */
export const ARTIFACT_KINDS = {
  home: homeSubdir('home', '', 'the Hermes home directory', true),
  cron: homeSubdir('cron', 'cron', 'scheduled jobs', true),
  sessions: homeSubdir('sessions', 'sessions', 'session transcripts and request dumps', true),
  logs: homeSubdir('logs', 'logs', 'log files', true),
  memories: homeSubdir('memories', 'memories', 'long-term memory files', true),
  pairing: homeSubdir('pairing', 'pairing', 'device pairing state', false),
  hooks: homeSubdir('hooks', 'hooks', 'user hooks', false),
  'image-cache': homeSubdir('image-cache', 'image_cache', 'cached images', false),
  'audio-cache': homeSubdir('audio-cache', 'audio_cache', 'cached audio', false),
  skills: homeSubdir('skills', 'skills', 'installed skills', false),
  'pending-messages': {
    name: 'pending-messages',
    description: 'shutdown spool: messages the gateway could not deliver before it stopped',
    dir: 'pending_messages',
    dirMode: 0o700,
    honoursHomeMode: true,
    requiredWhenManaged: false,
    ownership: true,
    file: SECRET_FILE,
  },
  'moa-traces': {
    name: 'moa-traces',
    description: 'Mixture-of-Agents turn traces (verbatim model inputs and outputs)',
    dir: 'moa-traces',
    dirMode: 0o700,
    honoursHomeMode: false,
    requiredWhenManaged: false,
    ownership: true,
    file: SECRET_FILE,
  },
  'saved-sessions': {
    name: 'saved-sessions',
    description: '/save conversation snapshots',
    dir: 'sessions/saved',
    dirMode: 0o700,
    honoursHomeMode: false,
    requiredWhenManaged: false,
    ownership: true,
    file: { mode: 0o600, managedMode: 0o600, managedMaxMode: 0o660, retighten: true, ceiling: 0o755, managedCeiling: 0o755, secret: true },
  },
  trajectories: {
    name: 'trajectories',
    description: 'trajectory samples (full transcripts for training)',
    dir: 'trajectories',
    dirMode: 0o700,
    honoursHomeMode: false,
    requiredWhenManaged: false,
    ownership: true,
    file: SECRET_FILE,
  },
  'state-db': {
    name: 'state-db',
    description: 'the session database state.db and its -wal/-shm files',
    dir: '',
    dirMode: 0o700,
    honoursHomeMode: true,
    requiredWhenManaged: true,
    ownership: true,
    file: SHARED_STATE,
    files: ['state.db', 'state.db-wal', 'state.db-shm'],
  },
  secrets: {
    name: 'secrets',
    description: 'credential files in the home (.env, auth.json, config.yaml)',
    dir: '',
    dirMode: 0o700,
    honoursHomeMode: true,
    requiredWhenManaged: true,
    ownership: true,
    file: CREDENTIAL_FILE,
    files: ['.env', 'auth.json', 'config.yaml'],
  },
} as const satisfies Record<string, ArtifactKind>;

export type ArtifactKindName = keyof typeof ARTIFACT_KINDS;

/** A kind by name, or the kind object itself. */
export type KindRef = ArtifactKindName | ArtifactKind;

export function getKind(ref: KindRef): ArtifactKind {
  if (typeof ref !== 'string') {
    if (!isKindShaped(ref)) throw new TypeError(`not an artifact kind: ${kindLabel(ref)} (pass a kind name or an entry of ARTIFACT_KINDS)`);
    return ref;
  }
  const kind = (ARTIFACT_KINDS as Record<string, ArtifactKind | undefined>)[ref];
  if (kind === undefined) throw new TypeError(`unknown artifact kind ${JSON.stringify(ref)}`);
  return kind;
}

const isMode = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0o7777;

/** A caller without types can pass anything: a kind must carry the modes the writers act on, or nothing is created. */
function isKindShaped(ref: unknown): boolean {
  if (typeof ref !== 'object' || ref === null) return false;
  const k = ref as Partial<ArtifactKind>;
  const file = k.file as Partial<FileRule> | undefined;
  return typeof k.name === 'string' && (k.dir === null || typeof k.dir === 'string') && isMode(k.dirMode) && typeof file === 'object' && isMode(file.mode);
}

function kindLabel(ref: unknown): string {
  try {
    const text = JSON.stringify(ref) as string | undefined; // undefined for undefined and functions
    return text ?? String(ref);
  } catch {
    return String(ref); // a cycle, a BigInt
  }
}

/** All kinds, in registry order. */
export function listKinds(): readonly ArtifactKind[] {
  return Object.values(ARTIFACT_KINDS);
}

/** The directory names the home is initialised with (unmanaged), or must already have (managed). */
export const STANDARD_SUBDIRS: readonly ArtifactKindName[] = [
  'cron',
  'sessions',
  'logs',
  'memories',
  'pairing',
  'hooks',
  'image-cache',
  'audio-cache',
  'skills',
];

/** The absolute directory of a kind in `env`'s home (throws for a kind whose directory the caller chooses). */
export function kindDir(ref: KindRef, env: Pick<HermesEnvironment, 'home'>): string {
  const kind = getKind(ref);
  if (kind.dir === null) throw new TypeError(`artifact kind ${kind.name} has no fixed directory`);
  return path.join(env.home, kind.dir);
}

/**
 * The mode this package gives a directory of `kind` it creates: the kind's mode, HERMES_HOME_MODE where
 * the kind honours it, or null on a managed install (no explicit mode: the setgid parent and umask decide).
 */
export function dirModeFor(ref: KindRef, env: Pick<HermesEnvironment, 'managed' | 'homeMode'>): number | null {
  const kind = getKind(ref);
  if (env.managed.managed) return null;
  if (kind.honoursHomeMode && env.homeMode.source === 'env') return env.homeMode.mode;
  return kind.dirMode;
}

/** The mode of a new file of `kind`: exact on unmanaged installs, umask-derived where the kind says so when managed. */
export function fileModeFor(ref: KindRef, env: Pick<HermesEnvironment, 'managed' | 'umask'>): number {
  const rule = getKind(ref).file;
  if (!env.managed.managed) return rule.mode;
  return rule.managedMode === 'umask' ? 0o660 & ~env.umask : rule.managedMode;
}

/** The widest mode an existing file of `kind` may have for the runtime to append to it or carry its mode over. */
export function fileCeilingFor(ref: KindRef, env: Pick<HermesEnvironment, 'managed'>): number {
  const rule = getKind(ref).file;
  return env.managed.managed ? rule.managedCeiling : rule.ceiling;
}

/**
 * The loosest permission bits an existing file of `kind` may carry: the kind's mode on an unmanaged install
 * (owner-only), its managed ceiling (group rw, never others) on a managed one.
 */
export function fileMaxModeFor(ref: KindRef, env: Pick<HermesEnvironment, 'managed'>): number {
  const rule = getKind(ref).file;
  return env.managed.managed ? rule.managedMaxMode : rule.mode;
}

/**
 * Picks the final mode of a written file: an explicit mode wins; otherwise an existing file keeps its
 * permission bits (unless the kind re-tightens on overwrite); otherwise the kind's mode. Setuid, setgid and
 * sticky bits are never carried over from an existing file.
 */
export function selectFileMode(input: {
  explicit?: number | undefined;
  existing?: number | undefined;
  kindMode: number;
  retighten: boolean;
}): number {
  if (input.explicit !== undefined) return input.explicit & 0o7777;
  if (input.existing !== undefined && !input.retighten) return input.existing & 0o777;
  return input.kindMode;
}

/** `0o2770` → `"2770"`, `0o600` → `"0600"`: the four-digit octal form used in tables and reports. */
export function formatMode(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

/**
 * What a package manager provides on a managed install, as data for the provisioning generators
 * (`hermes-fs provision`) and the doctor:
 * - `dirMode`: the mode of the home and of every kind directory it creates: setgid, group rwx (`2770`), so
 *   every uid of the service group can create entries and new directories inherit the group;
 * - `umask`: the service umask the managed file modes assume (`UMask=0007`: a shared state file comes out
 *   `0660`, as `fileModeFor` computes);
 * - `marker`: the file that tells a process started outside the service (an interactive member of the
 *   group, whose environment has no `HERMES_MANAGED`) that the home is managed, and its mode.
 */
export const MANAGED_INSTALL = {
  dirMode: 0o2770,
  umask: 0o007,
  marker: { name: '.managed', mode: 0o644 },
} as const;

/**
 * The kinds whose existing directory the runtime brings back to the kind's mode on an unmanaged install
 * (`ensureHermesHome` tightens or widens the home and the standard subdirectories it owns); every other
 * existing directory keeps the mode it has. On a managed install the runtime reconciles no directory.
 */
export const RECONCILED_WHEN_UNMANAGED: readonly ArtifactKindName[] = ['home', ...STANDARD_SUBDIRS];

/** Whether the runtime brings an existing directory of `kind` back to policy on this install type. */
export function reconcilesExistingDir(ref: KindRef, env: Pick<HermesEnvironment, 'managed'>): boolean {
  if (env.managed.managed) return false;
  const name = getKind(ref).name;
  return RECONCILED_WHEN_UNMANAGED.some((k) => k === name);
}

/** One kind of {@link registryData}: modes as four-digit octal strings. */
export interface RegistryKindData {
  readonly name: string;
  readonly description: string;
  readonly dir: string | null;
  readonly dirMode: string;
  readonly honoursHomeMode: boolean;
  readonly requiredWhenManaged: boolean;
  readonly reconciledWhenUnmanaged: boolean;
  readonly standardSubdir: boolean;
  readonly ownership: boolean;
  readonly files: readonly string[] | null;
  readonly file: {
    readonly mode: string;
    readonly managedMode: string;
    readonly managedMaxMode: string;
    readonly retighten: boolean;
    readonly ceiling: string;
    readonly managedCeiling: string;
    readonly secret: boolean;
  };
}

/** The registry as plain, JSON-serialisable data (`hermes-fs provision registry --json`). */
export interface RegistryData {
  readonly schemaVersion: 1;
  /** The directory mode used where nothing else says (HERMES_HOME_MODE unset or rejected). */
  readonly defaultDirMode: string;
  readonly kinds: readonly RegistryKindData[];
  readonly standardSubdirs: readonly string[];
  readonly managed: {
    readonly dirMode: string;
    readonly umask: string;
    readonly marker: { readonly name: string; readonly mode: string };
  };
}

/**
 * The registry exported as data, for tools that cannot import this package: every kind with its modes (as
 * four-digit octal strings; a managed file mode that follows the service umask is `"umask"`), the standard
 * subdirectories, what is reconciled, and the managed install's layout. Derived from the tables above at
 * each call, so it cannot drift from them.
 */
export function registryData(): RegistryData {
  const standard = new Set<string>(STANDARD_SUBDIRS);
  return {
    schemaVersion: 1,
    defaultDirMode: formatMode(DEFAULT_DIR_MODE),
    kinds: listKinds().map((k) => ({
      name: k.name,
      description: k.description,
      dir: k.dir,
      dirMode: formatMode(k.dirMode),
      honoursHomeMode: k.honoursHomeMode,
      requiredWhenManaged: k.requiredWhenManaged,
      reconciledWhenUnmanaged: RECONCILED_WHEN_UNMANAGED.some((n) => n === k.name),
      standardSubdir: standard.has(k.name),
      ownership: k.ownership,
      files: k.files === undefined ? null : [...k.files],
      file: {
        mode: formatMode(k.file.mode),
        managedMode: k.file.managedMode === 'umask' ? 'umask' : formatMode(k.file.managedMode),
        managedMaxMode: formatMode(k.file.managedMaxMode),
        retighten: k.file.retighten,
        ceiling: formatMode(k.file.ceiling),
        managedCeiling: formatMode(k.file.managedCeiling),
        secret: k.file.secret,
      },
    })),
    standardSubdirs: [...STANDARD_SUBDIRS],
    managed: {
      dirMode: formatMode(MANAGED_INSTALL.dirMode),
      umask: formatMode(MANAGED_INSTALL.umask),
      marker: { name: MANAGED_INSTALL.marker.name, mode: formatMode(MANAGED_INSTALL.marker.mode) },
    },
  };
}
