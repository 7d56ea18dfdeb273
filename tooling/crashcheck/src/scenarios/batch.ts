/**
 * The batch-file protocol of the gateway spool (packages/gateway/src/batch.ts), both halves:
 * - writing: payload files next to one batch file written with fs-policy's atomic write (temp, fsync, rename,
 *   directory fsync), as a stop does when its per-file writes cannot finish in time; on every crash state,
 *   recovery (salvage included) must insert every message the stop reported written exactly once;
 * - recovering: a spool holding a batch whose members are partly files of their own, replayed in batches of
 *   two; every message is in the database or in the spool on every crash state, and exactly once after the
 *   next pass. The batch may go only after its members are committed and checkpointed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { atomicWriteSync, silentLogger } from '@hermes/fs-policy';
import {
  type BatchMember,
  batchFileName,
  flushPendingSync,
  parseBatch,
  recoverPending,
  serializeBatch,
} from '@hermes/gateway';
import { openSessionDb, type SessionDb } from '@hermes/session-db';
import type { Mutation, Scenario } from '../scenario.js';
import { assertSynchronousFull, type DbCommit, initialDb, mutantGateway, type Recover, recordedStore } from './recovery.js';
import { envFor, filler, FSYNC_MUTATIONS, HOME, isFileFsync, namesIn, readState } from './util.js';

const SPOOL = `${HOME}/pending_messages`;
const SESSION = 'session-1';
const NOW = (): number => 1_767_225_600;

/** Written as a file of its own and also in the batch (its async write completed before the stop wrote the batch). */
const BOTH = 'both a file and a member';
/** Only in the batch; the second is over a block long, so a batch cut at a block boundary is torn. */
const ONLY = ['only in the batch', filler('a long member', 5000)];
/** A file of its own, not in the batch. */
const FILE_ONLY = 'a file of its own';
const TEXTS = [BOTH, ...ONLY, FILE_ONLY];

/** Real payload texts: flushed into a scratch home beside the recorded root, read back. */
function flushedMembers(root: string, texts: readonly string[], tag: string): BatchMember[] {
  const home = path.join(path.dirname(root), `scratch-${tag}`);
  fs.rmSync(home, { recursive: true, force: true });
  const r = flushPendingSync(Object.fromEntries(texts.map((t, i) => [`telegram:${tag}:${String(i)}`, t])), { home, env: envFor(path.dirname(home)), logger: silentLogger, now: NOW });
  if (r.failed.length > 0) throw new Error(`the scratch flush failed: ${r.failed.map((f) => f.line).join('; ')}`);
  const dir = path.join(home, 'pending_messages');
  const out = fs.readdirSync(dir).sort().map((name) => ({ name, text: fs.readFileSync(path.join(dir, name), 'utf8') }));
  fs.rmSync(home, { recursive: true, force: true });
  return out;
}

/** Where the write scenario keeps its batch-only members between setup and run (beside the recorded root). */
function membersFile(root: string): string {
  return path.join(path.dirname(root), 'batch-members.json');
}

function freshDb(root: string, file: string): void {
  fs.rmSync(file, { force: true });
  const db = openSessionDb({ path: file, env: envFor(root) });
  try {
    db.createSession({ id: SESSION, source: 'telegram', startedAt: 1_767_000_000 });
  } finally {
    db.close();
  }
}

function countIn(db: SessionDb): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of db.exportSession(SESSION)?.messages ?? []) {
    if (typeof m.content === 'string') counts.set(m.content, (counts.get(m.content) ?? 0) + 1);
  }
  return counts;
}

function textOf(text: string): string | undefined {
  try {
    const v = JSON.parse(text) as { data?: { text?: unknown } };
    return typeof v.data?.text === 'string' ? v.data.text : undefined;
  } catch {
    return undefined;
  }
}

/** The messages the spool of a crash state holds: payload files, and the members of valid batch files. */
function spoolTexts(dir: string): string[] {
  const out: string[] = [];
  for (const name of namesIn(dir, SPOOL)) {
    if (!name.endsWith('.json')) continue;
    const raw = readState(dir, `${SPOOL}/${name}`)?.data.toString('utf8') ?? '';
    let value: unknown;
    try {
      value = JSON.parse(raw) as unknown;
    } catch {
      continue; // torn: holds no message
    }
    const batch = parseBatch(value).batch;
    if (batch !== undefined) for (const m of batch.payloads) out.push(textOf(m.text) ?? '');
    else out.push(textOf(raw) ?? '');
  }
  return out;
}

/** A recovery pass on a crash state (salvage adopting every complete temp) into `file`: each message's count. */
function recoverState(dir: string, file: string, recover: Recover = recoverPending): Map<string, number> {
  const env = envFor(dir);
  const db = openSessionDb({ path: file, env });
  try {
    // After a power loss nothing of the recorded process runs: a home lock it held names a dead owner.
    fs.rmSync(path.join(dir, HOME, 'gateway.lock'), { recursive: true, force: true });
    const report = recover({ home: path.join(dir, HOME), env, store: db, resolveSessionId: () => SESSION, logger: silentLogger, salvage: { minAgeMs: 0 } });
    if (report.errors.length > 0) throw new Error(`the recovery of a crash state failed: ${report.errors.map((e) => `${e.code} ${e.message}`).join('; ')}`);
    return countIn(db);
  } finally {
    db.close();
  }
}

function writeScenario(form: 'sync'): Scenario {
  return {
    protocol: 'gateway batch file (written beside payload files)',
    form,
    promise: 'every message the stop reported written (a file, or a member of a batch that was renamed into place and its directory fsynced) is recovered exactly once',
    setup(root) {
      assertSynchronousFull();
      fs.mkdirSync(path.join(root, HOME, 'pending_messages'), { recursive: true, mode: 0o700 });
      freshDb(root, initialDb(root));
      // The payloads only the batch holds, flushed outside the recorded tree before the run.
      fs.writeFileSync(membersFile(root), JSON.stringify(flushedMembers(root, ONLY, 'batch')));
    },
    run(root, rec) {
      const home = path.join(root, HOME);
      const env = envFor(root);
      // The stop: two payloads reached the spool one by one, the rest is written as one batch file.
      const r = flushPendingSync({ 'telegram:both': BOTH, 'telegram:file': FILE_ONLY }, { home, env, logger: silentLogger, now: NOW });
      if (r.failed.length > 0 || !r.durable) throw new Error(`the flush failed: ${r.failed.map((f) => f.line).join('; ')}`);
      rec.mark('flush returned: 2 written', [BOTH, FILE_ONLY]);
      const dir = path.join(home, 'pending_messages');
      const both = r.written.find((w) => w.sessionKey === 'telegram:both');
      if (both === undefined) throw new Error('the flush did not write the shared payload');
      const members: BatchMember[] = [
        { name: path.basename(both.path), text: fs.readFileSync(both.path, 'utf8') },
        ...(JSON.parse(fs.readFileSync(membersFile(root), 'utf8')) as BatchMember[]),
      ];
      atomicWriteSync(path.join(dir, batchFileName()), Buffer.from(serializeBatch(members, NOW()), 'utf8'), {
        kind: 'pending-messages',
        env,
        createParents: false,
        overwrite: false,
      });
      rec.mark('batch written', TEXTS);
    },
    check({ dir, state, scratch, recording }) {
      const promised = (state.marks[state.marks.length - 1]?.data as string[] | undefined) ?? [];
      const file = path.join(scratch, 'state.db');
      fs.copyFileSync(initialDb(recording.root), file);
      const counts = recoverState(dir, file);
      const out: string[] = [];
      for (const t of TEXTS) {
        const n = counts.get(t) ?? 0;
        if (n > 1 || (promised.includes(t) && n !== 1)) out.push(`message ${JSON.stringify(t.slice(0, 24))} is in the database ${String(n)} times after recovery`);
      }
      return out;
    },
    mutations: [...FSYNC_MUTATIONS, BATCH_UNSYNCED],
  };
}

/** The batch file alone renamed into place without its fsync (the payload files keep theirs). */
const BATCH_UNSYNCED: Mutation = {
  name: 'batch-renamed-before-fsync',
  description: "the fsync of the batch file's temp (before its rename) is dropped; the payload files are written as usual",
  drop: (req) => isFileFsync(req) && path.basename(req.path).includes('batch-'),
};

const BATCH_REMOVED_EARLY: Mutation = {
  name: 'batch-removed-early',
  description: 'recovery removes a batch file as soon as it has read it, before its members are committed (a patched copy of the gateway build)',
};

function recoverScenario(): Scenario {
  return {
    protocol: 'gateway recoverPending of a batch file (batches of 2)',
    form: 'sync',
    promise: 'every message is in the database or still in the spool (a file or a batch member), never in neither; after the next pass, in the database exactly once',
    setup(root) {
      assertSynchronousFull();
      const home = path.join(root, HOME);
      fs.mkdirSync(path.join(home, 'pending_messages'), { recursive: true, mode: 0o700 });
      freshDb(root, initialDb(root));
      const env = envFor(root);
      const r = flushPendingSync({ 'telegram:both': BOTH, 'telegram:file': FILE_ONLY }, { home, env, logger: silentLogger, now: NOW });
      if (r.failed.length > 0) throw new Error('the setup flush failed');
      const both = r.written.find((w) => w.sessionKey === 'telegram:both');
      if (both === undefined) throw new Error('the setup flush did not write the shared payload');
      const members = [{ name: path.basename(both.path), text: fs.readFileSync(both.path, 'utf8') }, ...flushedMembers(root, ONLY, 'batch')];
      fs.writeFileSync(path.join(home, 'pending_messages', batchFileName()), serializeBatch(members, NOW()), { mode: 0o600 });
    },
    async run(root, rec, mutation) {
      const recover =
        mutation === BATCH_REMOVED_EARLY.name
          ? await mutantGateway(BATCH_REMOVED_EARLY.name, 'recover-batch.js', /\n(\s*)(return \{ members: entry\.members \};)/, '\n$1fs.unlinkSync(sys(p));\n$1$2')
          : recoverPending;
      const file = path.join(path.dirname(root), 'run.db');
      fs.copyFileSync(initialDb(root), file);
      const db = openSessionDb({ path: file, env: envFor(root) });
      const store = recordedStore(db, rec);
      const restore = rec.interposeFs();
      let inserted: number;
      let removed: boolean | undefined;
      try {
        const report = recover({ home: path.join(root, HOME), env: envFor(root), store, resolveSessionId: () => SESSION, batchSize: 2, logger: silentLogger });
        inserted = report.inserted.length;
        removed = report.batches[0]?.removed;
      } finally {
        restore();
        db.close();
      }
      if (inserted !== 4 || (mutation === undefined && removed !== true)) {
        throw new Error(`recovery did not do what the scenario needs: ${String(inserted)} inserted, batch removed ${String(removed)}`);
      }
      rec.mark('recoverPending returned');
    },
    check({ dir, state, scratch, recording }) {
      const out: string[] = [];
      const committed = new Set(state.db.flatMap((c) => (c as DbCommit).entries.flatMap((e) => e.rows.map((r) => (typeof r.content === 'string' ? r.content : '')))));
      const spooled = spoolTexts(dir);
      for (const t of TEXTS) {
        if (!committed.has(t) && !spooled.includes(t)) out.push(`message ${JSON.stringify(t.slice(0, 24))} is in neither the database nor the spool`);
      }
      const file = path.join(scratch, 'state.db');
      fs.copyFileSync(initialDb(recording.root), file);
      const db = openSessionDb({ path: file, env: envFor(dir) });
      try {
        for (const c of state.db) db.commitRecovered((c as DbCommit).entries);
      } finally {
        db.close();
      }
      const counts = recoverState(dir, file);
      for (const t of TEXTS) {
        const n = counts.get(t) ?? 0;
        if (n !== 1) out.push(`after the next recovery pass, message ${JSON.stringify(t.slice(0, 24))} is in the database ${String(n)} times`);
      }
      return out;
    },
    mutations: [BATCH_REMOVED_EARLY],
  };
}

export function batchScenarios(): Scenario[] {
  return [writeScenario('sync'), recoverScenario()];
}
