/**
 * The gateway's recovery pass: spool files replayed into the session database, each removed after its
 * batch's commit. The file side is recorded by interposing on `node:fs` (recovery calls it directly, not
 * through the fs-policy port); the database is one event per transaction — its commit is durable once the
 * store returned, as `synchronous = FULL` promises (checked below against the session-db build).
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { silentLogger } from '@hermes/fs-policy';
import { flushPendingSync, recoverPending, type RecoveryBatchEntry, type RecoveryReport, type SessionStore } from '@hermes/gateway';
import { openSessionDb, type SessionDb } from '@hermes/session-db';
import type { Recorder } from '../recorder.js';
import type { Mutation, Scenario } from '../scenario.js';
import { MESSAGES as FLUSHED } from './gateway.js';
import { envFor, HOME, namesIn, readState } from './util.js';

const SPOOL = `${HOME}/pending_messages`;
const SESSION = 'session-1';
/** Committed by an earlier pass that crashed before removing its file (its receipt is in the initial database). */
const EARLIER = 'committed before, not yet removed';
const TEXTS = [EARLIER, ...Object.values(FLUSHED)];

/** The databases live beside the recorded root, not in it: SQLite's own I/O is not part of the file model. */
export function initialDb(root: string): string {
  return path.join(path.dirname(root), 'initial.db');
}

export type Recover = typeof recoverPending;

const UNLINK_FIRST: Mutation = {
  name: 'unlink-before-commit',
  description: "recovery removes a batch's spool files before the database commit (a patched copy of the gateway build)",
};

/**
 * The session-db build must still open the database with WAL and `synchronous = FULL`: the model's "a commit
 * is durable once it returned" rests on it. Anything else stops the check instead of checking a wrong model.
 */
export function assertSynchronousFull(): void {
  const require = createRequire(import.meta.url);
  const built = path.join(path.dirname(require.resolve('@hermes/session-db')), 'open.js');
  const text = fs.readFileSync(built, 'utf8');
  if (!text.includes("db.pragma('synchronous = FULL')") || !text.includes("db.pragma('journal_mode = WAL')")) {
    throw new Error(`${built} no longer sets journal_mode = WAL and synchronous = FULL: the database model of docs/crash-model.md does not hold; update it`);
  }
}

/** A copy of the gateway build whose recovery unlinks each batch's files before committing it. */
function mutantRecover(): Promise<Recover> {
  return mutantGateway(UNLINK_FIRST.name, 'recover-commit.js', /\n(\s*)(outcomes = this\.#options\.store\.commitRecovered\()/, '\n$1for (const q of queue) this.#remove(q.path);\n$1$2');
}

/**
 * `recoverPending` of a copy of the gateway build in which `anchor` of the module `module` is replaced by
 * `replacement` (a planted bug). An anchor that no longer matches is an error: the mutation would test nothing.
 */
export async function mutantGateway(label: string, module: string, anchor: RegExp, replacement: string): Promise<Recover> {
  const require = createRequire(import.meta.url);
  const dist = path.dirname(require.resolve('@hermes/gateway'));
  const here = path.dirname(fileURLToPath(import.meta.url));
  const dest = path.resolve(here, '..', '..', '.cache', 'mutants', `gateway-${label}-${String(process.pid)}`);
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(dest, { recursive: true });
  // The .js files only, without their source-map comments (the maps name sources relative to the original).
  for (const name of fs.readdirSync(dist)) {
    if (!name.endsWith('.js')) continue;
    fs.writeFileSync(path.join(dest, name), fs.readFileSync(path.join(dist, name), 'utf8').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'));
  }
  const file = path.join(dest, module);
  const text = fs.readFileSync(file, 'utf8');
  if (!anchor.test(text)) throw new Error(`${label}: ${String(anchor)} was not found in ${file}; the mutation no longer matches recovery`);
  fs.writeFileSync(file, text.replace(anchor, replacement));
  try {
    const mod = (await import(pathToFileURL(path.join(dest, 'index.js')).href)) as { recoverPending: Recover };
    return mod.recoverPending;
  } finally {
    fs.rmSync(dest, { recursive: true, force: true }); // loaded: the module graph is in memory
  }
}

/** What a recorded database commit holds: the entries recovery committed. */
export interface DbCommit {
  readonly entries: readonly RecoveryBatchEntry[];
}

/**
 * The session store a recovery scenario runs against: `db`'s own, with every commit and checkpoint recorded in
 * the crash recording (a commit as begun and returned, a checkpoint with whether it copied every frame).
 */
export function recordedStore(db: SessionDb, rec: Recorder): SessionStore {
  let tx = 0;
  const store: SessionStore = {
    hasReceipt: (id) => db.hasReceipt(id),
    committedReceipts: (ids) => db.committedReceipts(ids),
    commitRecovered: (entries) => {
      const id = ++tx;
      rec.dbBegin(id);
      const outcomes = db.commitRecovered(entries);
      rec.dbCommit(id, { entries } satisfies DbCommit);
      return outcomes;
    },
  };
  // A store that can checkpoint (the stop contract of issue 13) is passed through, and its checkpoints recorded.
  const checkpoint = (db as unknown as { checkpoint?: () => { complete: boolean } }).checkpoint;
  if (typeof checkpoint === 'function') {
    Object.assign(store, {
      checkpoint: () => {
        const r = checkpoint.call(db);
        rec.dbCheckpoint(r.complete);
        return r;
      },
    });
  }
  return store;
}

function textsOf(entries: readonly RecoveryBatchEntry[]): string[] {
  return entries.flatMap((e) => e.rows.map((r) => (typeof r.content === 'string' ? r.content : '')));
}

function spoolTexts(dir: string): string[] {
  const out: string[] = [];
  for (const name of namesIn(dir, SPOOL)) {
    if (!name.endsWith('.json')) continue;
    const seen = readState(dir, `${SPOOL}/${name}`);
    try {
      const v = JSON.parse(seen?.data.toString('utf8') ?? '') as { data?: { text?: unknown } };
      if (typeof v.data?.text === 'string') out.push(v.data.text);
    } catch {
      // a torn file holds no message
    }
  }
  return out;
}

function countIn(db: SessionDb): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of db.exportSession(SESSION)?.messages ?? []) {
    if (typeof m.content === 'string') counts.set(m.content, (counts.get(m.content) ?? 0) + 1);
  }
  return counts;
}

export function recoveryScenario(): Scenario {
  return {
    protocol: 'gateway recoverPending (batches of 2)',
    form: 'sync',
    promise: 'every message is in the database or still in the spool, never in neither; after the next pass, in the database exactly once',
    setup(root) {
      assertSynchronousFull();
      fs.mkdirSync(path.join(root, HOME), { mode: 0o700 });
      const env = envFor(root);
      const home = path.join(root, HOME);
      const db = openSessionDb({ path: initialDb(root), env });
      try {
        db.createSession({ id: SESSION, source: 'telegram', startedAt: 1_767_000_000 });
        const flushOptions = { home, env, logger: silentLogger, now: () => 1_767_225_600 };
        // An earlier pass committed this file and crashed before removing it.
        flushPendingSync({ 'telegram:0': EARLIER }, flushOptions);
        try {
          recoverPending({
            home,
            env,
            store: db,
            resolveSessionId: () => SESSION,
            logger: silentLogger,
            hooks: {
              afterCommit: () => {
                throw new Error('crash between commit and unlink');
              },
            },
          });
        } catch {
          // the simulated crash
        }
        flushPendingSync(FLUSHED, flushOptions);
      } finally {
        db.close();
      }
      if (fs.existsSync(`${initialDb(root)}-wal`)) throw new Error('the initial database kept a WAL after close');
    },
    async run(root, rec, mutation) {
      const recover = mutation === UNLINK_FIRST.name ? await mutantRecover() : recoverPending;
      const file = path.join(path.dirname(root), 'run.db');
      fs.copyFileSync(initialDb(root), file);
      const db = openSessionDb({ path: file, env: envFor(root) });
      const store = recordedStore(db, rec);
      let report: RecoveryReport;
      const restore = rec.interposeFs();
      try {
        report = recover({ home: path.join(root, HOME), env: envFor(root), store, resolveSessionId: () => SESSION, batchSize: 2, logger: silentLogger });
      } finally {
        restore();
        db.close();
      }
      if (report.inserted.length !== 3 || report.alreadyCommitted.length !== 1) {
        throw new Error(`recovery did not do what the scenario needs: ${String(report.inserted.length)} inserted, ${String(report.alreadyCommitted.length)} already committed`);
      }
      rec.mark('recoverPending returned');
    },
    check({ dir, state, scratch, recording }) {
      const out: string[] = [];
      const committed = new Set([EARLIER, ...state.db.flatMap((c) => textsOf((c as DbCommit).entries))]);
      const spooled = spoolTexts(dir);
      for (const t of TEXTS) {
        if (!committed.has(t) && !spooled.includes(t)) out.push(`message ${JSON.stringify(t.slice(0, 24))} is in neither the database nor the spool`);
      }
      // The next pass, on this state, with the database as it persisted: each message exactly once.
      const file = path.join(scratch, 'state.db');
      fs.copyFileSync(initialDb(recording.root), file);
      const env = envFor(dir);
      const db = openSessionDb({ path: file, env });
      try {
        for (const c of state.db) db.commitRecovered((c as DbCommit).entries);
        // After a power loss nothing of the recorded process runs: a home lock it held names a dead owner.
        fs.rmSync(path.join(dir, HOME, 'gateway.lock'), { recursive: true, force: true });
        recoverPending({ home: path.join(dir, HOME), env, store: db, resolveSessionId: () => SESSION, logger: silentLogger });
        const counts = countIn(db);
        for (const t of TEXTS) {
          const n = counts.get(t) ?? 0;
          if (n !== 1) out.push(`after the next recovery pass, message ${JSON.stringify(t.slice(0, 24))} is in the database ${String(n)} times`);
        }
      } finally {
        db.close();
      }
      return out;
    },
    mutations: [UNLINK_FIRST],
  };
}
