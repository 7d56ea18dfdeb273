/**
 * The matrix child process. It runs under the scenario's umask and environment (HERMES_MANAGED,
 * HERMES_HOME_MODE), sets a fresh home up as the scenario says, writes each artifact through its package's
 * real API, measures the resulting modes with lstat, and prints one JSON line.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readUmask } from '@hermes/fs-policy';

/** The child's umask as four-digit octal, or 'unknown' where /proc cannot tell (it is never changed to read it). */
function umaskText(): string {
  const u = readUmask();
  return u === null ? 'unknown' : octal(u);
}
import type {
  ArtifactResult,
  ChildTask,
  CrossUidOwnerTask,
  CrossUidResult,
  CrossUidWriterTask,
  MatrixTask,
  MeasuredCell,
} from './protocol.js';
import { type CellId, MANAGED_SUBDIRS, type MatrixArtifact, octal, S4_PREEXISTING, scenarioById } from './scenarios.js';
import { makeDirWithMode, setDirMode } from './setup.js';
import { flushOnePayload, WRITERS } from './writers.js';

function modeOf(p: string): string | null {
  try {
    return octal(fs.lstatSync(p).mode);
  } catch {
    return null;
  }
}

function oneLine(err: unknown): string {
  if (err instanceof Error) {
    const line = (err as { toLine?: () => string }).toLine?.() ?? err.message;
    return line.split('\n')[0] ?? line;
  }
  return String(err);
}

/** The scenario's home: S3/S4 get the 2770 setgid home and the NixOS tmpfiles subdirectories; S4 its 0750 dirs. */
function setUpHome(scenarioId: string, container: string, home: string, artifact: MatrixArtifact | null): void {
  const s = scenarioById(scenarioId);
  if (s === undefined) throw new Error(`unknown scenario ${scenarioId}`);
  if (s.homeDirMode !== null) {
    makeDirWithMode(container, home, s.homeDirMode);
    for (const sub of MANAGED_SUBDIRS) makeDirWithMode(container, path.join(home, sub), s.homeDirMode);
  }
  if (s.preexistingDirMode !== null && artifact !== null) {
    for (const rel of S4_PREEXISTING[artifact]) makeDirWithMode(container, path.join(home, rel), s.preexistingDirMode);
  }
}

async function runMatrixTask(task: MatrixTask): Promise<ArtifactResult[]> {
  const results: ArtifactResult[] = [];
  for (const artifact of task.artifacts) {
    const container = fs.mkdtempSync(path.join(task.root, `${artifact}-`));
    const home = path.join(container, 'home');
    process.env.HERMES_HOME = home;
    const cells: MeasuredCell[] = [];
    let note = '';
    let error: string | null = null;
    try {
      setUpHome(task.scenario, container, home, artifact);
      const written = await WRITERS[artifact](home, container);
      note = written.note;
      for (const [id, p] of Object.entries(written.paths) as [CellId, string | null][]) {
        cells.push({
          id,
          path: p === null ? null : path.relative(home, p),
          mode: p === null ? null : modeOf(p),
          error: p === null ? 'not produced' : null,
        });
      }
      written.close?.();
    } catch (err) {
      error = oneLine(err);
    }
    results.push({ artifact, home, cells, note, error });
  }
  return results;
}

function ids(): { uid: number; gid: number } {
  return {
    uid: typeof process.geteuid === 'function' ? process.geteuid() : -1,
    gid: typeof process.getegid === 'function' ? process.getegid() : -1,
  };
}

async function runCrossUid(task: CrossUidOwnerTask | CrossUidWriterTask): Promise<CrossUidResult> {
  if (task.type === 'xuid-owner') {
    fs.mkdirSync(task.root);
    // Other uids must be able to traverse the container (fs-policy sets the exact mode; no chmod here).
    setDirMode(task.root, 0o711);
    setUpHome(task.scenario, task.root, task.home, null);
  }
  process.env.HERMES_HOME = task.home;
  const base = { type: task.type, ...ids(), umask: umaskText() };
  try {
    const report = await flushOnePayload(task.home);
    return { ...base, ...report, dirMode: modeOf(path.join(task.home, 'pending_messages')), thrown: null };
  } catch (err) {
    return { ...base, written: [], failed: [], dirMode: modeOf(path.join(task.home, 'pending_messages')), thrown: oneLine(err) };
  }
}

async function main(): Promise<void> {
  const raw = process.argv[2];
  if (raw === undefined) throw new Error('usage: child.js TASK_JSON');
  const task = JSON.parse(raw) as ChildTask;
  if (task.type === 'matrix') {
    const results = await runMatrixTask(task);
    process.stdout.write(
      `${JSON.stringify({ type: 'matrix', scenario: task.scenario, pid: process.pid, umask: umaskText(), results })}\n`,
    );
    return;
  }
  process.stdout.write(`${JSON.stringify(await runCrossUid(task))}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${oneLine(err)}\n`);
  process.exitCode = 2;
});
