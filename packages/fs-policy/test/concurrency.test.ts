// Many processes writing one file at once, each a child running the built package: appends that interleave
// whole, and atomic rewrites a concurrent reader only ever sees complete.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnNode } from '@hermes/test-utils';
import { fixture, tempEnv } from './helpers.js';

function waitAll(children: ReturnType<typeof spawnNode>[]): Promise<number[]> {
  return Promise.all(
    children.map(
      (c) =>
        new Promise<number>((resolve) => {
          c.stdout.resume();
          c.stderr.resume();
          c.on('exit', (code) => {
            resolve(code ?? -1);
          });
        }),
    ),
  );
}

describe('concurrency across processes', () => {
  it('8 processes x 2,000 appends of random sizes up to 64 KiB: every line parses, the count is exact', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'shared.jsonl');
    const children = Array.from({ length: 8 }, (_, i) =>
      spawnNode(fixture('append-many.mjs'), [f, String(i), '2000', String(64 * 1024), i % 2 === 0 ? 'handle' : 'call'], {
        env: { HERMES_HOME: env.home, HERMES_MANAGED: 'false' },
      }),
    );
    expect(await waitAll(children)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    const perWriter = new Map<number, number[]>();
    let lines = 0;
    const text = fs.readFileSync(f, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    for (const line of text.slice(0, -1).split('\n')) {
      const rec = JSON.parse(line) as { w: number; i: number; pad: string };
      lines++;
      const seen = perWriter.get(rec.w) ?? [];
      seen.push(rec.i);
      perWriter.set(rec.w, seen);
    }
    expect(lines).toBe(16_000);
    for (let w = 0; w < 8; w++) {
      const seen = perWriter.get(w) ?? [];
      expect(seen.length).toBe(2000);
      expect(seen).toEqual(Array.from({ length: 2000 }, (_, i) => i)); // each writer's lines in its own order
    }
    fs.rmSync(f); // about 500 MB: never left for the exit handler (a killed worker would leave it)
  });

  it('8 processes atomically rewriting one file: every read and the result is one complete version', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'pending_messages', 'state.json');
    fs.mkdirSync(path.dirname(f), { mode: 0o700 });
    fs.writeFileSync(f, JSON.stringify({ writer: -1, i: -1, body: '', sum: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }));
    const children = Array.from({ length: 8 }, (_, i) =>
      spawnNode(fixture('rewrite-many.mjs'), [f, String(i), '150'], { env: { HERMES_HOME: env.home, HERMES_MANAGED: 'false' } }),
    );
    const done = waitAll(children);
    let reads = 0;
    const state = { finished: false };
    void done.then(() => {
      state.finished = true;
    });
    const { createHash } = await import('node:crypto');
    const check = (): void => {
      const v = JSON.parse(fs.readFileSync(f, 'utf8')) as { body: string; sum: string };
      expect(createHash('sha256').update(v.body).digest('hex')).toBe(v.sum);
      reads++;
    };
    while (!state.finished) {
      check();
      await new Promise((r) => setImmediate(r));
    }
    expect(await done).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    check();
    expect(reads).toBeGreaterThan(1);
    expect(fs.readdirSync(path.dirname(f))).toEqual(['state.json']);
  });
});
