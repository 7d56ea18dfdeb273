/**
 * How the matrix writes each artifact: through its package's real, public API — the same call an agent or
 * gateway makes — with nothing pre-created beyond what the scenario itself prescribes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { saveConversation } from '@hermes/cli';
import { flushPending } from '@hermes/gateway';
import { createMoaTracer } from '@hermes/moa-trace';
import { openSessionDb, STATE_DB_FILE } from '@hermes/session-db';
import { saveTrajectory } from '@hermes/trajectory';
import type { CellId, MatrixArtifact } from './scenarios.js';

export interface Written {
  readonly paths: Partial<Record<CellId, string | null>>;
  readonly note: string;
  /** Called after measuring (e.g. to close the database, which removes -wal/-shm). */
  readonly close?: () => void;
}

type Writer = (home: string, container: string) => Promise<Written>;

const SAMPLE_MESSAGES = [
  { role: 'user', content: 'matrix probe: what is 2 + 2?', timestamp: 1_764_000_000 },
  { role: 'assistant', content: '4', timestamp: 1_764_000_001 },
] as const;

const savedSessions: Writer = async (home) => {
  const r = await saveConversation({ model: 'matrix-probe', messages: SAMPLE_MESSAGES }, { home, format: 'json' });
  return {
    paths: { 'sessions/saved/': path.dirname(r.path), snapshot: r.path },
    note: '@hermes/cli saveConversation(history, { home, format: "json" })',
  };
};

const trajectories: Writer = async (home, container) => {
  // The agent's working directory is a git work tree: the trajectory must be redirected into the home.
  const cwd = path.join(container, 'checkout');
  fs.mkdirSync(path.join(cwd, '.git'), { recursive: true });
  const r = await saveTrajectory(
    [
      { from: 'human', value: 'matrix probe' },
      { from: 'gpt', value: 'ok' },
    ],
    { model: 'matrix-probe', completed: true, home, cwd },
  );
  if (!r.redirected) throw new Error(`trajectory was not redirected out of the git work tree (${r.path})`);
  return {
    paths: { trajectory: r.path },
    note: '@hermes/trajectory saveTrajectory(…, { cwd: <a git work tree>, home }) — redirected to <home>/trajectories/',
  };
};

const pendingMessages: Writer = async (home) => {
  const report = await flushPending({ 'agent:main:telegram:dm:matrix': { text: 'matrix probe', session_id: 'matrix-probe' } }, { home });
  const failed = report.failed[0];
  if (failed !== undefined) throw new Error(failed.line);
  const written = report.written[0];
  if (written === undefined) throw new Error('the gateway flush wrote nothing and reported no failure');
  return {
    paths: { 'pending_messages/': report.dir, payload: written.path },
    note: '@hermes/gateway flushPending({ <session key>: message }, { home })',
  };
};

const moaTraces: Writer = async (home) => {
  const tracer = createMoaTracer({ home, saveTraces: true, traceDir: null, privacyFilter: 'off' });
  const r = await tracer.record({
    sessionId: 'matrix-probe',
    preset: 'probe',
    references: [
      { label: 'ref-1', model: 'probe-model', provider: 'probe', inputMessages: [{ role: 'user', content: 'matrix probe' }], output: 'ok' },
    ],
    aggregator: { label: 'agg', model: 'probe-model', provider: 'probe', inputMessages: [{ role: 'user', content: 'matrix probe' }], output: 'ok', streamed: false },
  });
  if (!r.written) throw r.error ?? new Error('the MoA tracer wrote nothing');
  return {
    paths: { 'moa-traces/': tracer.traceDir, trace: r.path ?? null },
    note: '@hermes/moa-trace createMoaTracer({ home, saveTraces: true }).record(turn)',
  };
};

const stateDb: Writer = (home) => {
  const db = openSessionDb({ home });
  try {
    const id = db.createSession({ source: 'cli', model: 'matrix-probe' });
    db.appendMessage({ sessionId: id, role: 'user', content: 'matrix probe' });
  } catch (err) {
    db.close();
    throw err;
  }
  const file = path.join(home, STATE_DB_FILE);
  // Measured while the connection is open: SQLite removes -wal/-shm when the last connection closes.
  return Promise.resolve({
    paths: { 'state.db': file, 'state.db-wal': `${file}-wal`, 'state.db-shm': `${file}-shm` },
    note: '@hermes/session-db openSessionDb({ home }) + createSession + appendMessage (WAL files measured while open)',
    close: () => {
      db.close();
    },
  });
};

export const WRITERS: Record<MatrixArtifact, Writer> = {
  'pending-messages': pendingMessages,
  'moa-traces': moaTraces,
  'saved-sessions': savedSessions,
  trajectories,
  'state-db': stateDb,
};

export interface FlushOutcome {
  readonly written: readonly { path: string; mode: string | null; uid: number | null }[];
  readonly failed: readonly { path: string; code: string; uid: number | null; message: string }[];
}

function modeOf(p: string): string | null {
  try {
    return (fs.lstatSync(p).mode & 0o7777).toString(8).padStart(4, '0');
  } catch {
    return null;
  }
}

function ownerOf(p: string): number | null {
  try {
    return fs.lstatSync(p).uid;
  } catch {
    return null;
  }
}

/** The cross-uid probe: one payload through the real gateway flush, and its report as the other side sees it. */
export async function flushOnePayload(home: string): Promise<FlushOutcome> {
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : -1;
  const report = await flushPending({ [`agent:main:telegram:dm:uid${uid}`]: { text: `cross-uid probe from uid ${uid}` } }, { home });
  return {
    written: report.written.map((w) => ({ path: w.path, mode: modeOf(w.path), uid: ownerOf(w.path) })),
    failed: report.failed.map((f) => ({ path: f.path, code: f.code, uid: f.uid, message: f.line })),
  };
}
