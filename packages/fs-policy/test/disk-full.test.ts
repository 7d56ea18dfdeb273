import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeds, tempRoot } from '@hermes/test-utils';
import { atomicWriteSync, FsPolicyError, loadEnvironment, privateAppend, setLogger, silentLogger } from '../src/index.js';
import { caught } from './helpers.js';

setLogger(silentLogger);

// A real 64 KiB tmpfs: the device fills up for real.
describeNeeds(['root', 'mount'], 'disk full (root only: 64 KiB tmpfs)', () => {
  let mnt: string;
  beforeAll(() => {
    mnt = path.join(tempRoot(), 'tmpfs');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', mnt]);
  });
  afterAll(() => {
    spawnSync('umount', [mnt]);
  });

  it('atomic write fails with a typed ENOSPC, the original is intact, no temp file remains', () => {
    const env = loadEnvironment({ home: mnt, env: { HERMES_MANAGED: 'false' } });
    const dir = path.join(mnt, 'pending_messages');
    const f = path.join(dir, 'p.json');
    atomicWriteSync(f, 'original', { kind: 'pending-messages', env });
    const e = caught(() => atomicWriteSync(f, Buffer.alloc(200 * 1024, 0x61), { kind: 'pending-messages', env }));
    expect(e.code).toBe('ENOSPC');
    expect(e.step).toBe('write');
    expect(e.hint).toContain('full');
    expect(fs.readFileSync(f, 'utf8')).toBe('original');
    expect(fs.readdirSync(dir)).toEqual(['p.json']);
  });

  it('append fails with a typed ENOSPC; the original lines are intact and nothing is truncated', async () => {
    const env = loadEnvironment({ home: mnt, env: { HERMES_MANAGED: 'false' } });
    const f = path.join(mnt, 'trajectories', 't.jsonl');
    await privateAppend(f, '{"line":1}\n', { kind: 'trajectories', env });
    let err: unknown;
    try {
      await privateAppend(f, `${JSON.stringify({ big: 'b'.repeat(200 * 1024) })}\n`, { kind: 'trajectories', env });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FsPolicyError);
    expect((err as FsPolicyError).code).toBe('ENOSPC');
    // The first line is whole; what the full device accepted of the second record stays as one torn final
    // fragment (cutting it could cut another writer's line) and is named in the error.
    const text = fs.readFileSync(f, 'utf8');
    expect(text.startsWith('{"line":1}\n{"big":"bbb')).toBe(true);
    const rest = text.slice('{"line":1}\n'.length);
    expect(rest.includes('\n') ? rest.indexOf('\n') === rest.length - 1 : true).toBe(true);
    expect((err as FsPolicyError).message).toMatch(/partial record/);
    expect(fs.readdirSync(path.dirname(f))).toEqual(['t.jsonl']);
  });
});
