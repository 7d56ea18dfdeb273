/**
 * The batch-file protocol of the gateway spool under the crash model: writing a batch beside payload files, and
 * recovering a spool that holds one. The real protocols keep their promise on every crash state; planted bugs
 * (the batch renamed before its data is fsynced, the batch removed before its members are committed) are caught.
 */
import { setLogger, silentLogger } from '@hermes/fs-policy';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CheckResult, runScenario } from '../src/check.js';
import { batchScenarios } from '../src/scenarios/batch.js';

beforeAll(() => {
  setLogger(silentLogger);
});

const WRITE = 'gateway batch file (written beside payload files)';
const RECOVER = 'gateway recoverPending of a batch file (batches of 2)';

async function run(protocol: string, mutation?: string): Promise<CheckResult> {
  const s = batchScenarios().find((x) => x.protocol === protocol);
  if (s === undefined) throw new Error(`no scenario ${protocol}`);
  const [r] = await runScenario(s, { models: ['ext4'], mutation });
  if (r === undefined) throw new Error('no result');
  console.log(`row4b crashcheck ${protocol}${mutation === undefined ? '' : ` [${mutation}]`}: ops ${String(r.ops)}, states ${String(r.states)}, violations ${String(r.violations)}${r.minimal === undefined ? '' : `; minimal: cut ${String(r.minimal.state.cut)}: ${r.minimal.messages.join(' | ')}`}`);
  return r;
}

describe('the batch-file protocol, ext4 model', () => {
  it('writing a batch beside payload files: every message reported written is recovered exactly once in every crash state', async () => {
    const r = await run(WRITE);
    expect(r.error).toBeUndefined();
    expect(r.states).toBeGreaterThan(1);
    expect(r.violations).toBe(0);
  });

  it('recovering a spool with a batch: never in neither, exactly once after the next pass, in every crash state', async () => {
    const r = await run(RECOVER);
    expect(r.error).toBeUndefined();
    expect(r.states).toBeGreaterThan(1);
    expect(r.violations).toBe(0);
  });
});

describe('planted bugs in the batch-file protocol are caught', () => {
  it('the batch renamed into place before its data is fsynced: a torn batch loses messages the stop reported written', async () => {
    const r = await run(WRITE, 'batch-renamed-before-fsync');
    expect(r.error).toBeUndefined();
    expect(r.violations).toBeGreaterThanOrEqual(1);
    // The batch is torn under its final name once the stop reported it written: its members are lost.
    expect(r.minimal?.messages).toContain('message "only in the batch" is in the database 0 times after recovery');
    expect(r.minimal?.messages.some((m) => m.startsWith('message "a file of its own"'))).toBe(false);
  });

  it('the batch removed as soon as it is read, before its members are committed: a message in neither', async () => {
    const r = await run(RECOVER, 'batch-removed-early');
    expect(r.error).toBeUndefined();
    expect(r.violations).toBeGreaterThanOrEqual(1);
    expect(r.minimal?.messages).toContain('message "only in the batch" is in neither the database nor the spool');
  });
});
