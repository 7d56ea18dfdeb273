/**
 * Batch files for the recovery tests: real payload texts, produced by the package's own flush into a scratch
 * home, assembled into a batch with `serializeBatch` in the spool under test.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { serializeJson } from '@hermes/fs-policy';
import { expect } from 'vitest';
import { type BatchMember, batchFileName, flushAgentHistorySync, flushOverflowSync, flushPendingSync, serializeBatch } from '../src/index.js';
import { envelope } from '../src/payload.js';
import { spoolDir, tempDir } from './helpers.js';

/** The payload files of a scratch home's spool, as batch members (name and exact text), in name order. */
export function membersOf(home: string): BatchMember[] {
  const dir = spoolDir(home);
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()
    .map((name) => ({ name, text: fs.readFileSync(path.join(dir, name), 'utf8') }));
}

/** A scratch home on tmpfs when there is one (its fsyncs cost nothing), else in the test's temp root. */
function scratchHome(): string {
  if (fs.existsSync('/dev/shm')) {
    const root = fs.mkdtempSync('/dev/shm/hermes-row4b-');
    scratch.push(root);
    return path.join(root, 'home');
  }
  return path.join(tempDir(), 'scratch-home');
}
const scratch: string[] = [];
process.on('exit', () => {
  for (const root of scratch) fs.rmSync(root, { recursive: true, force: true });
});

/** `n` overflow payloads flushed for real (`data.session_id` set, so no resolver is needed): `<prefix>-<i>`. */
export function flushedOverflow(n: number, sessionId: string, prefix: string): BatchMember[] {
  const home = scratchHome();
  const r = flushOverflowSync({ 'agent:main:telegram:dm:b': Array.from({ length: n }, (_, i) => ({ text: `${prefix}-${String(i)}`, session_id: sessionId })) }, { home });
  expect(r.failed).toEqual([]);
  return membersOf(home);
}

/** `n` pending payloads for `sessionKey`, flushed for real (no session id: resolved through the store). */
export function flushedPending(texts: Readonly<Record<string, string>>): BatchMember[] {
  const home = scratchHome();
  const r = flushPendingSync(texts, { home });
  expect(r.failed).toEqual([]);
  return membersOf(home);
}

/** One agent-history snapshot, flushed for real. */
export function flushedSnapshot(sessionId: string): BatchMember[] {
  const home = scratchHome();
  const r = flushAgentHistorySync(sessionId, [{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }], { home });
  expect(r.failed).toEqual([]);
  return membersOf(home);
}

/**
 * `n` overflow payloads built the way the flush builds them (its envelope, its serializer with indent 2), without
 * a file each: for spools of 100,000 members, which a real flush takes minutes to write one by one. The test that
 * uses them checks the construction against payloads the flush wrote.
 */
export function builtOverflow(n: number, sessionId: string, prefix: string, from = 0): BatchMember[] {
  const out: BatchMember[] = [];
  for (let i = from; i < from + n; i++) {
    const name = `pending-${i.toString(16).padStart(32, '0')}.json`;
    const payload = {
      ...envelope('overflow', 1_767_225_600 + i / 1000),
      session_key: 'agent:main:telegram:dm:b',
      reason: 'shutdown',
      index: i,
      data: { text: `${prefix}-${String(i)}`, session_id: sessionId },
    };
    out.push({ name, text: serializeJson(payload, name, { indent: 2 }).toString('utf8') });
  }
  return out;
}

/** Writes a batch of `members` into the spool of `home` (created 0700 when missing); returns its path. */
export function writeBatch(home: string, members: readonly BatchMember[], name = batchFileName()): string {
  const dir = spoolDir(home);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, name);
  fs.writeFileSync(file, serializeBatch(members), { mode: 0o600 });
  return file;
}

/** Writes members as files of their own into the spool of `home`. */
export function writeFiles(home: string, members: readonly BatchMember[]): void {
  const dir = spoolDir(home);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const m of members) fs.writeFileSync(path.join(dir, m.name), m.text, { mode: 0o600 });
}
