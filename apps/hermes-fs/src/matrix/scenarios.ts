/**
 * The five scenarios of docs/permissions.md and the octal table the matrix is measured against. The expected values
 * are written out literally: they are the contract, never derived from the @hermes/fs-policy registry the
 * matrix is testing.
 */

export type ScenarioId = 'S1' | 'S2' | 'S3' | 'S4' | 'S5';

export interface MatrixScenario {
  readonly id: ScenarioId;
  readonly title: string;
  /** The umask the child process runs under (`/bin/sh -c 'umask … && exec node …'`). */
  readonly umask: number;
  /** Runs with `HERMES_MANAGED=nixos`. */
  readonly managed: boolean;
  /** `HERMES_HOME_MODE`, when the scenario sets it. */
  readonly homeMode: string | null;
  /** The home exists beforehand with this mode (S3/S4: 2770 setgid, as the NixOS tmpfiles rule makes it). */
  readonly homeDirMode: number | null;
  /** The artifact directories exist beforehand with this mode (S4). */
  readonly preexistingDirMode: number | null;
}

export const MATRIX_SCENARIOS: readonly MatrixScenario[] = [
  { id: 'S1', title: 'unmanaged, umask 022', umask: 0o022, managed: false, homeMode: null, homeDirMode: null, preexistingDirMode: null },
  { id: 'S2', title: 'unmanaged, umask 077', umask: 0o077, managed: false, homeMode: null, homeDirMode: null, preexistingDirMode: null },
  {
    id: 'S3',
    title: 'managed (HERMES_MANAGED=nixos), umask 0007, home 2770, dir absent',
    umask: 0o007,
    managed: true,
    homeMode: null,
    homeDirMode: 0o2770,
    preexistingDirMode: null,
  },
  {
    id: 'S4',
    title: 'managed, artifact dirs pre-existing 0750',
    umask: 0o007,
    managed: true,
    homeMode: null,
    homeDirMode: 0o2770,
    preexistingDirMode: 0o750,
  },
  {
    id: 'S5',
    title: 'unmanaged, HERMES_HOME_MODE=0701, umask 022',
    umask: 0o022,
    managed: false,
    homeMode: '0701',
    homeDirMode: null,
    preexistingDirMode: null,
  },
];

/** The artifacts the matrix writes, each through its own package's real API. */
export type MatrixArtifact = 'pending-messages' | 'moa-traces' | 'saved-sessions' | 'trajectories' | 'state-db';

export const MATRIX_ARTIFACTS: readonly MatrixArtifact[] = [
  'pending-messages',
  'moa-traces',
  'saved-sessions',
  'trajectories',
  'state-db',
];

/** One measured path of an artifact: a directory or a file. */
export type CellId =
  | 'pending_messages/'
  | 'payload'
  | 'moa-traces/'
  | 'trace'
  | 'sessions/saved/'
  | 'snapshot'
  | 'trajectory'
  | 'state.db'
  | 'state.db-wal'
  | 'state.db-shm';

export interface CellSpec {
  readonly id: CellId;
  readonly artifact: MatrixArtifact;
  readonly target: 'dir' | 'file';
  /** The column header of the table. */
  readonly label: string;
  /** Which package call wrote it, for the table legend. */
  readonly writer: string;
}

export const CELLS: readonly CellSpec[] = [
  { id: 'pending_messages/', artifact: 'pending-messages', target: 'dir', label: 'pending_messages/', writer: '@hermes/gateway flush' },
  { id: 'payload', artifact: 'pending-messages', target: 'file', label: 'payload pending-*.json', writer: '@hermes/gateway flush' },
  { id: 'moa-traces/', artifact: 'moa-traces', target: 'dir', label: 'moa-traces/', writer: '@hermes/moa-trace tracer' },
  { id: 'trace', artifact: 'moa-traces', target: 'file', label: 'trace <session>.jsonl', writer: '@hermes/moa-trace tracer' },
  { id: 'sessions/saved/', artifact: 'saved-sessions', target: 'dir', label: 'sessions/saved/', writer: '@hermes/cli saveConversation' },
  { id: 'snapshot', artifact: 'saved-sessions', target: 'file', label: 'snapshot hermes_conversation_*', writer: '@hermes/cli saveConversation' },
  { id: 'trajectory', artifact: 'trajectories', target: 'file', label: 'trajectory <home>/trajectories/*.jsonl', writer: '@hermes/trajectory saveTrajectory' },
  { id: 'state.db', artifact: 'state-db', target: 'file', label: 'state.db', writer: '@hermes/session-db' },
  { id: 'state.db-wal', artifact: 'state-db', target: 'file', label: 'state.db-wal', writer: '@hermes/session-db' },
  { id: 'state.db-shm', artifact: 'state-db', target: 'file', label: 'state.db-shm', writer: '@hermes/session-db' },
];

/**
 * The table of docs/permissions.md, literally: the mode each cell must measure under each scenario (Linux: a directory created in
 * a setgid directory inherits the bit, so the managed "0770" of the seed PRs reads 2770).
 */
export const EXPECTED: Readonly<Record<ScenarioId, Readonly<Record<CellId, string>>>> = {
  S1: {
    'pending_messages/': '0700', payload: '0600',
    'moa-traces/': '0700', trace: '0600',
    'sessions/saved/': '0700', snapshot: '0600',
    trajectory: '0600',
    'state.db': '0600', 'state.db-wal': '0600', 'state.db-shm': '0600',
  },
  S2: {
    'pending_messages/': '0700', payload: '0600',
    'moa-traces/': '0700', trace: '0600',
    'sessions/saved/': '0700', snapshot: '0600',
    trajectory: '0600',
    'state.db': '0600', 'state.db-wal': '0600', 'state.db-shm': '0600',
  },
  S3: {
    'pending_messages/': '2770', payload: '0600',
    'moa-traces/': '2770', trace: '0600',
    'sessions/saved/': '2770', snapshot: '0600',
    trajectory: '0600',
    'state.db': '0660', 'state.db-wal': '0660', 'state.db-shm': '0660',
  },
  S4: {
    'pending_messages/': '0750', payload: '0600',
    'moa-traces/': '0750', trace: '0600',
    'sessions/saved/': '0750', snapshot: '0600',
    trajectory: '0600',
    'state.db': '0660', 'state.db-wal': '0660', 'state.db-shm': '0660',
  },
  S5: {
    'pending_messages/': '0701', payload: '0600',
    'moa-traces/': '0700', trace: '0600',
    'sessions/saved/': '0700', snapshot: '0600',
    trajectory: '0600',
    'state.db': '0600', 'state.db-wal': '0600', 'state.db-shm': '0600',
  },
};

/** Directories S4 creates beforehand at 0750 (relative to the home). */
export const S4_PREEXISTING: Readonly<Record<MatrixArtifact, readonly string[]>> = {
  'pending-messages': ['pending_messages'],
  'moa-traces': ['moa-traces'],
  'saved-sessions': ['sessions/saved'],
  trajectories: ['trajectories'],
  'state-db': [],
};

/** What the NixOS module's tmpfiles rules pre-create at 2770 inside a managed home (reference §14). */
export const MANAGED_SUBDIRS: readonly string[] = ['cron', 'sessions', 'logs', 'memories', 'plugins'];

export function scenarioById(id: string): MatrixScenario | undefined {
  return MATRIX_SCENARIOS.find((s) => s.id === id);
}

export function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}
