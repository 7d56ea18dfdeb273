/** The matrix's cross-uid rows: two throwaway users, one flushing into a spool the other created (S3, S1). */
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Cleanup } from './cleanup.js';
import type { CrossUidResult } from './protocol.js';
import { MATRIX_SCENARIOS, type MatrixScenario } from './scenarios.js';
import { childJson, runChild } from './spawn.js';
import { createAccounts, planAccounts, type ThrowawayUsers } from './users.js';

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

/** The environment a scenario's children run with (managed or not, the home mode). */
export function scenarioEnv(s: MatrixScenario): Record<string, string> {
  const env: Record<string, string> = {};
  if (s.managed) env.HERMES_MANAGED = 'nixos';
  if (s.homeMode !== null) env.HERMES_HOME_MODE = s.homeMode;
  return env;
}

function asCrossUid(value: unknown): CrossUidResult {
  return value as CrossUidResult;
}

interface CrossUidOutcome {
  users: ThrowawayUsers | null;
  rows: CrossUidRow[];
}

/** The cross-uid rows; a failure to set them up (no useradd, …) is a failed row, never a silent skip. */
export async function crossUidSafe(cleanup: Cleanup, signal: AbortSignal): Promise<CrossUidOutcome> {
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
