/**
 * The append handle's group commit: how a burst becomes write(2) buffers. A burst is copied into one buffer that
 * is reused from batch to batch (no large allocation per batch), and that buffer is never touched while the
 * kernel may still be reading it (a sync call arriving while a batch is in flight gets a buffer of its own).
 * And the per-call work of the one-shot writers: the effective uid is read once per call, not once per check.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { setFaultHook } from '../src/internal/io.js';
import { openAppendHandle, setLogger, silentLogger } from '../src/index.js';
import { tempEnv } from './helpers.js';

setLogger(silentLogger);
afterEach(() => {
  setFaultHook(undefined);
});

/** A 1 KiB JSON line numbered `i`. */
function line(i: number): string {
  const head = `{"i":${String(i)},"pad":"`;
  return `${head}${'p'.repeat(1024 - head.length - 3)}"}\n`;
}

function indices(file: string): number[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { i: number }).i);
}

describe('append handle: group commit buffers', () => {
  it('a burst of 2,500 appends is three writes from one reused buffer, every line whole and in order', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'burst.jsonl');
    const h = await openAppendHandle(f, { kind: 'trajectories', env });
    const writes: { bytes: number; buffer: ArrayBufferLike }[] = [];
    setFaultHook((req) => {
      if (req.op === 'write' && (req.args[3] as number) > 0) writes.push({ bytes: req.args[3] as number, buffer: (req.args[1] as Uint8Array).buffer });
      return undefined;
    });
    const sizes = await Promise.all(Array.from({ length: 2500 }, (_, i) => h.append(line(i))));
    await h.close();
    setFaultHook(undefined);
    const buffers = new Set(writes.map((w) => w.buffer)).size;
    console.log(`burst: 2500 appends, ${String(writes.length)} writes (${writes.map((w) => w.bytes).join(', ')} bytes), ${String(buffers)} distinct buffer(s)`);
    expect(sizes.every((n) => n === 1024)).toBe(true);
    expect(writes.map((w) => w.bytes)).toEqual([1024 * 1024, 1024 * 1024, 452 * 1024]);
    expect(buffers).toBe(1);
    expect(indices(f)).toEqual(Array.from({ length: 2500 }, (_, i) => i));
    expect(fs.statSync(f).size).toBe(2500 * 1024);
  });

  it('a sync append while a batch is in flight never overwrites that batch: every record once, batches whole', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'mixed.jsonl');
    const h = await openAppendHandle(f, { kind: 'trajectories', env });
    let fired = false;
    setFaultHook((req) => {
      // The first batch's write, just before it is handed to the kernel: the sync call comes now.
      if (!fired && req.op === 'write' && (req.args[3] as number) === 1024 * 1024) {
        fired = true;
        h.appendSync(line(9999));
      }
      return undefined;
    });
    const all = Promise.all(Array.from({ length: 1500 }, (_, i) => h.append(line(i))));
    await all;
    await h.close();
    setFaultHook(undefined);
    const got = indices(f);
    console.log(`in flight: ${String(got.length)} lines, first ${String(got[0])}, sync line at ${String(got.indexOf(9999))}`);
    expect(fired).toBe(true);
    // The sync call writes what was still queued (1024..1499), then its own record; the batch in flight lands after.
    expect(got).toEqual([
      ...Array.from({ length: 476 }, (_, i) => 1024 + i),
      9999,
      ...Array.from({ length: 1024 }, (_, i) => i),
    ]);
  });

});

describe('the effective uid of one call', () => {
  it('is read once per append and once per atomic write, and used for every owner check of that call', async () => {
    const env = tempEnv();
    const { atomicWriteJsonSync, privateAppendSync } = await import('../src/index.js');
    const f = path.join(env.home, 'trajectories', 'uid.jsonl');
    const t = path.join(env.home, 'pending_messages', 'uid.json');
    privateAppendSync(f, '{"warm":1}\n', { kind: 'trajectories', env });
    atomicWriteJsonSync(t, { warm: 1 }, { kind: 'pending-messages', env });
    const real = process.geteuid;
    if (real === undefined) throw new Error('this test needs process.geteuid (POSIX)');
    let reads = 0;
    const counted = (): number => {
      reads++;
      return real();
    };
    process.geteuid = counted;
    let appendReads: number;
    let writeReads: number;
    try {
      privateAppendSync(f, '{"n":1}\n', { kind: 'trajectories', env });
      appendReads = reads;
      reads = 0;
      atomicWriteJsonSync(t, { n: 1 }, { kind: 'pending-messages', env });
      writeReads = reads;
    } finally {
      process.geteuid = real;
    }
    console.log(`geteuid reads (euid ${String(real())}): append to an existing file ${String(appendReads)}, replace ${String(writeReads)}`);
    expect(appendReads).toBe(1);
    expect(writeReads).toBe(1);
    expect(fs.readFileSync(f, 'utf8')).toBe('{"warm":1}\n{"n":1}\n');
  });
});
