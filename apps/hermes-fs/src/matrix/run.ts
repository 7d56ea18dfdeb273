/**
 * `hermes-fs matrix`: every consumer's real write path, in fresh temp homes, under S1–S5 — one child process
 * per scenario (the umask is per process), all scenarios in parallel — measured with lstat and compared
 * with the literal table of docs/permissions.md. As root, adds the cross-uid rows with real throwaway users.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { CrossUidResult, MatrixChildResult } from './protocol.js';
import {
  CELLS,
  type CellId,
  EXPECTED,
  MATRIX_ARTIFACTS,
  MATRIX_SCENARIOS,
  type MatrixArtifact,
  type MatrixScenario,
  octal,
  type ScenarioId,
} from './scenarios.js';
import { childJson, runChild, stopChildren } from './spawn.js';
import { createAccounts, type PlannedAccounts, planAccounts, removeAccounts, type ThrowawayUsers } from './users.js';

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

export interface CrossUidRow {
  readonly scenario: 'S1' | 'S3';
  readonly description: string;
  readonly expected: 'written' | 'failure reported';
  readonly outcome: 'written' | 'failure reported' | 'silent loss' | 'unexpected write' | 'error';
  readonly ok: boolean;
  readonly detail: string;
  readonly path: string | null;
  readonly uid: number | null;
  readonly code: string | null;
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

function scenarioEnv(s: MatrixScenario): Record<string, string> {
  const env: Record<string, string> = {};
  if (s.managed) env.HERMES_MANAGED = 'nixos';
  if (s.homeMode !== null) env.HERMES_HOME_MODE = s.homeMode;
  return env;
}

const isRoot = (): boolean => typeof process.geteuid === 'function' && process.geteuid() === 0;

/** Everything the matrix must remove, whatever happens (exit, error, Ctrl-C); runs once, however often it is asked. */
class Cleanup {
  readonly paths: string[] = [];
  accounts: PlannedAccounts | null = null;
  #running: Promise<string[]> | null = null;

  /** Removes the temp homes and the throwaway accounts; resolves to what could not be removed. */
  run(): Promise<string[]> {
    this.#running ??= this.#run();
    return this.#running;
  }

  async #run(): Promise<string[]> {
    // A user that still owns a running process cannot be removed: the children go first.
    await stopChildren();
    const left: string[] = [];
    if (this.accounts !== null) left.push(...(await removeAccounts(this.accounts)));
    for (const p of this.paths) {
      try {
        fs.rmSync(p, { recursive: true, force: true });
      } catch (err) {
        left.push(`${p} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
    }
    return left;
  }
}

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

function asCrossUid(value: unknown): CrossUidResult {
  return value as CrossUidResult;
}

interface CrossUidOutcome {
  users: ThrowawayUsers | null;
  rows: CrossUidRow[];
}

/** The cross-uid rows; a failure to set them up (no useradd, …) is a failed row, never a silent skip. */
async function crossUidSafe(cleanup: Cleanup, signal: AbortSignal): Promise<CrossUidOutcome> {
  let users: ThrowawayUsers | null = null;
  try {
    return await crossUid(cleanup, signal, (u) => (users = u));
  } catch (err) {
    const message = err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err);
    return {
      users,
      rows: [
        {
          scenario: 'S3',
          description: 'set up two throwaway users and a shared group (useradd/groupadd)',
          expected: 'written',
          outcome: 'error',
          ok: false,
          detail: `${message} (run without --cross-uid to skip the cross-uid rows)`,
          path: null,
          uid: null,
          code: null,
        },
      ],
    };
  }
}

async function crossUid(cleanup: Cleanup, signal: AbortSignal, created: (u: ThrowawayUsers) => void): Promise<CrossUidOutcome> {
  const plan = planAccounts(2);
  // Known to the cleanup before anything exists: an interruption at any moment removes whatever was made.
  cleanup.accounts = plan;
  const users = await createAccounts(plan);
  created(users);
  const [a, b] = users.users;
  if (a === undefined || b === undefined) throw new Error('could not create two throwaway users');
  const rows: CrossUidRow[] = [];
  for (const id of ['S3', 'S1'] as const) {
    const s = MATRIX_SCENARIOS.find((x) => x.id === id);
    if (s === undefined) continue;
    // /tmp is world-writable and sticky: user A creates its own container there (no chown needed).
    const root = path.join(os.tmpdir(), `hermes-fs-xuid-${id}-${randomBytes(6).toString('hex')}`);
    cleanup.paths.push(root);
    const home = path.join(root, 'home');
    const env = scenarioEnv(s);
    const ownerRun = await runChild({ type: 'xuid-owner', scenario: id, root, home }, { umask: s.umask, env, uid: a.uid, gid: users.gid, signal });
    const owner = asCrossUid(childJson(ownerRun));
    const description =
      id === 'S3'
        ? `uid ${b.uid} (group ${users.group}, umask 0007) flushes a payload into the pending_messages/ uid ${a.uid} created`
        : `uid ${b.uid} (umask 022) flushes a payload into uid ${a.uid}'s unmanaged home`;
    if (owner.thrown !== null || owner.written.length === 0) {
      rows.push({
        scenario: id,
        description,
        expected: id === 'S3' ? 'written' : 'failure reported',
        outcome: 'error',
        ok: false,
        detail: `set-up as uid ${a.uid} failed: ${owner.thrown ?? owner.failed.map((f) => `${f.code} ${f.path}`).join('; ')}`,
        path: null,
        uid: a.uid,
        code: null,
      });
      continue;
    }
    const writerRun = await runChild({ type: 'xuid-writer', scenario: id, home }, { umask: s.umask, env, uid: b.uid, gid: users.gid, signal });
    const writer = asCrossUid(childJson(writerRun));
    const wrote = writer.written[0];
    const failed = writer.failed[0];
    if (id === 'S3') {
      const ok = wrote !== undefined && writer.thrown === null && wrote.uid === b.uid && wrote.mode === '0600';
      rows.push({
        scenario: id,
        description,
        expected: 'written',
        outcome: wrote !== undefined ? 'written' : failed !== undefined ? 'failure reported' : writer.thrown !== null ? 'error' : 'silent loss',
        ok,
        detail:
          wrote !== undefined
            ? `written ${path.relative(home, wrote.path)} mode ${wrote.mode ?? '?'} owner uid ${String(wrote.uid)} in pending_messages/ ${owner.dirMode ?? '?'} owned by uid ${a.uid}`
            : failed !== undefined
              ? `flush failed: ${failed.code} ${failed.path}`
              : (writer.thrown ?? 'flush reported nothing'),
        path: wrote?.path ?? failed?.path ?? null,
        uid: b.uid,
        code: failed?.code ?? null,
      });
    } else {
      const reported =
        failed !== undefined && writer.thrown === null && failed.code === 'EACCES' && failed.uid === b.uid && failed.path.startsWith(home);
      rows.push({
        scenario: id,
        description,
        expected: 'failure reported',
        outcome: wrote !== undefined ? 'unexpected write' : failed !== undefined ? 'failure reported' : writer.thrown !== null ? 'error' : 'silent loss',
        ok: reported && wrote === undefined,
        detail:
          failed !== undefined
            ? `flush report: ${failed.code} at ${failed.path} as uid ${String(failed.uid)} — ${failed.message}`
            : wrote !== undefined
              ? `unexpectedly written: ${wrote.path}`
              : (writer.thrown ?? 'flush reported nothing: the message was lost silently'),
        path: failed?.path ?? wrote?.path ?? null,
        uid: b.uid,
        code: failed?.code ?? null,
      });
    }
  }
  return { users, rows };
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
