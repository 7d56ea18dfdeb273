/**
 * The checker on the real protocols (0 violations under the ext4 model) and on deliberately broken ones (each
 * caught, with the minimal crash state the model predicts), and its self-check: an operation the recorder did
 * not see is an error, never a silently smaller state space.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setLogger, silentLogger } from '@hermes/fs-policy';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CheckResult, runScenario } from '../src/check.js';
import type { Scenario } from '../src/scenario.js';
import { allScenarios } from '../src/scenarios/index.js';

beforeAll(() => {
  setLogger(silentLogger);
});

function find(protocol: string, form: 'sync' | 'async'): Scenario {
  const s = allScenarios().find((x) => x.protocol === protocol && x.form === form);
  if (s === undefined) throw new Error(`no scenario ${protocol} (${form})`);
  return s;
}

async function mutated(protocol: string, form: 'sync' | 'async', mutation: string): Promise<CheckResult> {
  const [r] = await runScenario(find(protocol, form), { models: ['ext4'], mutation });
  if (r === undefined) throw new Error('no result');
  return r;
}

describe('the real protocols, ext4 model: no crash state breaks a promise', () => {
  for (const s of allScenarios()) {
    it(`${s.protocol} (${s.form})`, async () => {
      const [r] = await runScenario(s, { models: ['ext4'] });
      expect(r?.error).toBeUndefined();
      expect(r?.violations).toBe(0);
      expect(r?.states).toBeGreaterThan(0);
    });
  }
});

describe('mutations are caught with a minimal crash state', () => {
  it('atomicWrite without the file fsync: the rename persists before the data (a torn target)', async () => {
    const r = await mutated('atomicWrite (replace)', 'sync', 'no-file-fsync');
    expect(r.error).toBeUndefined();
    expect(r.violations).toBeGreaterThan(0);
    // create temp, write (lost: only 2 of its 3 blocks persist), fchmod, link .bak, rename; crash.
    expect(r.minimal?.state.cut).toBe(5);
    expect(r.minimal?.state.lost).toEqual([1]);
    expect(r.minimal?.messages).toEqual(['home/sessions/state.json holds 8192 bytes that are neither the old (100) nor the new (9000) content']);
  });

  it('atomicWrite without the directory fsync: the call returns, the rename is lost', async () => {
    const r = await mutated('atomicWrite (replace)', 'async', 'no-dir-fsync');
    expect(r.violations).toBeGreaterThan(0);
    expect(r.minimal?.state.cut).toBe(8);
    expect(r.minimal?.state.lost).toEqual([5, 6]);
    expect(r.minimal?.messages).toEqual(['home/sessions/state.json holds the old bytes although atomicWrite returned (durable: file+dir)']);
  });

  it('the gateway flush without the file fsync: an empty payload under its final name', async () => {
    const r = await mutated('gateway flushPending', 'sync', 'no-file-fsync');
    expect(r.minimal?.state.cut).toBe(4);
    expect(r.minimal?.state.lost).toEqual([1]);
    expect(r.minimal?.messages).toHaveLength(1);
    expect(r.minimal?.messages[0]).toMatch(/^home\/pending_messages\/pending-[0-9a-f]{32}\.json is not a complete payload \(0 bytes\): recovery would keep it as unparseable$/);
  });

  it('privateAppend without its fsync: a record reported written is not on disk', async () => {
    const r = await mutated('privateAppend (fsync)', 'async', 'no-file-fsync');
    // After the directory fsyncs that make the new directory and the new file durable, the write whose fsync
    // the mutant drops.
    expect(r.minimal?.state.cut).toBe(5);
    expect(r.minimal?.messages).toEqual(['record 0 was reported written (fsync) but home/trajectories/log.jsonl holds only 0 intact bytes of the 1518 it needs']);
  });
});

describe('mutations of recovery and of the repairs', () => {
  it('recovery removing spool files before the database commit: a message in neither', async () => {
    const r = await mutated('gateway recoverPending (batches of 2)', 'sync', 'unlink-before-commit');
    expect(r.error).toBeUndefined();
    expect(r.violations).toBeGreaterThan(0);
    // Operations 1–10 take the home's gateway lock (staging directory, holder file, rename). Then the first batch:
    // the file committed by an earlier pass, then "see you tomorrow"; both unlinked, then the crash.
    expect(r.minimal?.state.cut).toBe(12);
    expect(r.minimal?.state.lost).toEqual([]);
    expect(r.minimal?.state.db).toEqual([]);
    expect(r.minimal?.messages).toEqual([
      'message "see you tomorrow" is in neither the database nor the spool',
      'after the next recovery pass, message "see you tomorrow" is in the database 0 times',
    ]);
  });

  it('a repair that widens before it narrows (chmod 0777) is caught at its first chmod', async () => {
    const r = await mutated('reconcileDir + reconcileFile', 'sync', 'chmod-widens');
    expect(r.minimal?.state.cut).toBe(1);
    expect(r.minimal?.messages).toEqual(['home/sessions has mode 0777, wider than 0755 before the fix (bits 0022)']);
  });
});

describe('the recording checks itself', () => {
  it('a change made behind the recorder (plain node:fs, not interposed) is reported, not ignored', async () => {
    const sneaky: Scenario = {
      protocol: 'sneaky write',
      form: 'sync',
      promise: 'none',
      setup(root) {
        fs.mkdirSync(path.join(root, 'home'));
      },
      run(root) {
        fs.writeFileSync(path.join(root, 'home', 'unseen'), 'x');
      },
      check() {
        return [];
      },
    };
    const [r] = await runScenario(sneaky, { models: ['ext4'] });
    expect(r?.states).toBe(0);
    expect(r?.error).toBe('the replayed model differs from the tree on disk (an operation was not recorded): home/unseen: on disk, missing in the model');
  });

  it('a mutation that no longer matches the protocol is an error', async () => {
    const [r] = await runScenario(find('secureMkdir (two new levels)', 'sync'), { models: ['ext4'], mutation: undefined });
    expect(r?.error).toBeUndefined();
    await expect(runScenario(find('secureMkdir (two new levels)', 'sync'), { models: ['ext4'], mutation: 'no-file-fsync' })).rejects.toThrow(
      'crashcheck: secureMkdir (two new levels) has no mutation no-file-fsync',
    );
  });
});
