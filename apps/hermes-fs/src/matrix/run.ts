/**
 * `hermes-fs matrix`: every consumer's real write path, in fresh temp homes, under S1–S5 — one child process
 * per scenario (the umask is per process), all scenarios in parallel — measured with lstat and compared
 * with the literal table of docs/permissions.md. As root, adds the cross-uid rows with real throwaway users.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { MatrixChildResult } from './protocol.js';
import { Cleanup } from './cleanup.js';
import { type CrossUidRow, crossUidSafe, scenarioEnv } from './cross-uid.js';
import {
  CELLS,
  type CellId,
  EXPECTED,
  MATRIX_ARTIFACTS,
  MATRIX_SCENARIOS,
  type MatrixArtifact,
  octal,
  type ScenarioId,
} from './scenarios.js';
import { childJson, runChild, stopChildren } from './spawn.js';
import type { PlannedAccounts } from './users.js';

export type { CrossUidRow } from './cross-uid.js';

export interface MatrixCell {
  readonly scenario: ScenarioId;
  readonly artifact: MatrixArtifact;
  readonly cell: CellId;
  readonly target: 'dir' | 'file';
  /** Path relative to the scenario's temp home. */
  readonly path: string | null;
  readonly expected: string;
  readonly measured: string | null;
  readonly ok: boolean;
  readonly error: string | null;
}


export interface MatrixReport {
  readonly schemaVersion: 1;
  readonly command: 'matrix';
  readonly ok: boolean;
  readonly durationMs: number;
  readonly platform: string;
  readonly node: string;
  readonly uid: number;
  readonly artifacts: readonly MatrixArtifact[];
  readonly scenarios: readonly {
    readonly id: ScenarioId;
    readonly title: string;
    readonly umask: string;
    readonly managed: boolean;
    readonly homeMode: string | null;
    readonly homeDirMode: string | null;
    readonly preexistingDirMode: string | null;
    readonly childMs: number;
  }[];
  readonly cells: readonly MatrixCell[];
  readonly notes: readonly { readonly artifact: MatrixArtifact; readonly note: string }[];
  readonly crossUid: {
    readonly ran: boolean;
    readonly skipped: string | null;
    readonly users: readonly { readonly name: string; readonly uid: number }[];
    readonly group: string | null;
    readonly rows: readonly CrossUidRow[];
    /** Throwaway accounts that could not be removed (`user NAME`, `group NAME`); the run then fails. */
    readonly leftover: readonly string[];
  };
  readonly summary: { readonly cells: number; readonly passed: number; readonly failed: number; readonly crossUidFailed: number };
}

/**
 * Why the cross-uid rows did not run when they were not asked for: they create accounts, so only on request.
 */
export const CROSS_UID_NOT_ASKED = 'not requested: they create two throwaway users and a group; run as root with --cross-uid to add them';

export interface MatrixOptions {
  readonly only?: readonly MatrixArtifact[];
  /**
   * Add the cross-uid rows: as root, create two throwaway users and a group, run the probes as them and remove
   * them (default false: nothing is created unless asked; the rows are then reported as skipped, with the flag).
   */
  readonly crossUid?: boolean;
  /** Skip the cross-uid rows (the default; wins over {@link crossUid}). */
  readonly noCrossUid?: boolean;
  /**
   * Handle SIGINT/SIGTERM while the matrix runs (the CLI): stop the children, wait for them, remove the
   * throwaway users and temp homes, name anything left, then exit 130/143. A second signal only hastens the
   * children's end (SIGKILL); the cleanup still completes.
   */
  readonly handleSignals?: boolean;
}

const isRoot = (): boolean => typeof process.geteuid === 'function' && process.geteuid() === 0;

async function runScenarios(root: string, artifacts: readonly MatrixArtifact[], signal: AbortSignal) {
  return Promise.all(
    MATRIX_SCENARIOS.map(async (s) => {
      const dir = path.join(root, s.id);
      fs.mkdirSync(dir);
      const run = await runChild({ type: 'matrix', scenario: s.id, artifacts, root: dir }, { umask: s.umask, env: scenarioEnv(s), signal });
      let result: MatrixChildResult | null = null;
      let error: string | null = null;
      try {
        result = childJson(run) as MatrixChildResult;
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      return { scenario: s, run, result, error };
    }),
  );
}

/** Never settles: once interrupted, the signal handler finishes the cleanup and exits 130/143. */
function handedToSignalHandler(): Promise<never> {
  return new Promise<never>(() => undefined);
}

function stderrLine(line: string): void {
  try {
    process.stderr.write(`${line}\n`);
  } catch {
    // stderr closed
  }
}

function interruptedLine(signal: NodeJS.Signals, accounts: PlannedAccounts | null, left: readonly string[]): string {
  const removed = accounts === null ? [] : [...accounts.users.map((u) => `user ${u}`), `group ${accounts.group}`].filter((a) => !left.includes(a));
  const parts = [`hermes-fs matrix: interrupted by ${signal}: children stopped, temp homes removed`];
  if (removed.length > 0) parts.push(`throwaway accounts removed: ${removed.join(', ')}`);
  return parts.join('; ');
}

/**
 * Runs the matrix. The temp homes and the throwaway accounts are removed when it ends, fails or (with
 * `handleSignals`) is interrupted; accounts that could not be removed are named in `crossUid.leftover` (and
 * make the report fail), or on stderr when interrupted.
 */
export async function runMatrix(options: MatrixOptions = {}): Promise<MatrixReport> {
  const started = performance.now();
  const artifacts = options.only !== undefined && options.only.length > 0 ? MATRIX_ARTIFACTS.filter((a) => options.only?.includes(a)) : MATRIX_ARTIFACTS;
  const cleanup = new Cleanup();
  const abort = new AbortController();
  const state: { interrupted: NodeJS.Signals | null } = { interrupted: null };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (state.interrupted !== null) {
      // A second Ctrl-C: hasten the children's end; the cleanup already running still completes.
      stderrLine(`hermes-fs matrix: ${signal} again: killing the children; still removing the throwaway accounts`);
      void stopChildren(0);
      return;
    }
    state.interrupted = signal;
    stderrLine(`hermes-fs matrix: ${signal}: stopping the children, then removing the throwaway accounts and temp homes…`);
    abort.abort();
    void cleanup.run().then(
      (left) => {
        stderrLine(interruptedLine(signal, cleanup.accounts, left));
        if (left.length > 0) {
          stderrLine(`hermes-fs matrix: could not remove ${left.join(', ')}; remove them by hand (userdel NAME, groupdel NAME, rm -r PATH)`);
        }
        process.exit(signal === 'SIGINT' ? 130 : 143);
      },
      (err: unknown) => {
        stderrLine(`hermes-fs matrix: cleanup failed: ${err instanceof Error ? err.message : String(err)}`);
        process.exit(signal === 'SIGINT' ? 130 : 143);
      },
    );
  };
  if (options.handleSignals === true) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  try {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-fs-matrix-'));
    cleanup.paths.push(root);
    const wantCrossUid = artifacts.includes('pending-messages') && options.crossUid === true && options.noCrossUid !== true;
    const crossSkip = !wantCrossUid
      ? !artifacts.includes('pending-messages')
        ? 'pending-messages not selected'
        : CROSS_UID_NOT_ASKED
      : !isRoot()
        ? 'not running as root (the cross-uid rows need useradd/groupadd and two real uids)'
        : process.platform !== 'linux'
          ? 'not Linux'
          : null;
    const [scenarioRuns, cross] = await Promise.all([
      runScenarios(root, artifacts, abort.signal),
      crossSkip === null ? crossUidSafe(cleanup, abort.signal) : Promise.resolve(null),
    ]);
    if (state.interrupted !== null) await handedToSignalHandler();
    const leftover = await cleanup.run();
    const cells: MatrixCell[] = [];
    const notes = new Map<MatrixArtifact, string>();
    for (const { scenario, result, error } of scenarioRuns) {
      for (const spec of CELLS) {
        if (!artifacts.includes(spec.artifact)) continue;
        const expected = EXPECTED[scenario.id][spec.id];
        const ar = result?.results.find((r) => r.artifact === spec.artifact);
        const measuredCell = ar?.cells.find((c) => c.id === spec.id);
        const measured = measuredCell?.mode ?? null;
        if (ar !== undefined && ar.note !== '' && !notes.has(spec.artifact)) notes.set(spec.artifact, ar.note);
        cells.push({
          scenario: scenario.id,
          artifact: spec.artifact,
          cell: spec.id,
          target: spec.target,
          path: measuredCell?.path ?? null,
          expected,
          measured,
          ok: measured === expected,
          error: measuredCell?.error ?? ar?.error ?? error ?? (ar === undefined ? 'no result from the child process' : null),
        });
      }
    }
    const crossRows = cross?.rows ?? [];
    const failed = cells.filter((c) => !c.ok).length;
    const crossUidFailed = crossRows.filter((r) => !r.ok).length;
    const leftAccounts = leftover.filter((l) => l.startsWith('user ') || l.startsWith('group '));
    const report: MatrixReport = {
      schemaVersion: 1,
      command: 'matrix',
      ok: failed === 0 && crossUidFailed === 0 && leftAccounts.length === 0,
      durationMs: 0,
      platform: process.platform,
      node: process.version,
      uid: typeof process.geteuid === 'function' ? process.geteuid() : -1,
      artifacts,
      scenarios: scenarioRuns.map(({ scenario: s, run }) => ({
        id: s.id,
        title: s.title,
        umask: octal(s.umask),
        managed: s.managed,
        homeMode: s.homeMode,
        homeDirMode: s.homeDirMode === null ? null : octal(s.homeDirMode),
        preexistingDirMode: s.preexistingDirMode === null ? null : octal(s.preexistingDirMode),
        childMs: run.ms,
      })),
      cells,
      notes: [...notes].map(([artifact, note]) => ({ artifact, note })),
      crossUid: {
        ran: cross !== null,
        skipped: crossSkip,
        users: cross?.users?.users.map((u) => ({ name: u.name, uid: u.uid })) ?? [],
        group: cross?.users?.group ?? null,
        rows: crossRows,
        leftover: leftAccounts,
      },
      summary: { cells: cells.length, passed: cells.length - failed, failed, crossUidFailed },
    };
    return { ...report, durationMs: Math.round(performance.now() - started) };
  } finally {
    if (state.interrupted !== null) await handedToSignalHandler();
    await cleanup.run();
    if (options.handleSignals === true) {
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
    }
  }
}
