import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastJson, modeOf, runNode, spawnNode, tempRoot } from '@hermes/test-utils';
import {
  appendJsonLine,
  appendJsonLineSync,
  FsPolicyError,
  openAppendHandle,
  privateAppendSync,
  setLogger,
  silentLogger,
} from '../src/index.js';
import { fixture, tempEnv } from './helpers.js';

setLogger(silentLogger);

describe('private append', () => {
  it('creates owner-only, never re-tightens, one line per record', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 't.jsonl');
    const r1 = appendJsonLineSync(f, { a: 1 }, { kind: 'trajectories', env });
    expect(r1).toMatchObject({ created: true, mode: 0o600, bytes: 8 });
    expect(modeOf(f)).toBe('0600');
    fs.chmodSync(f, 0o644);
    const r2 = await appendJsonLine(f, { b: 2 }, { kind: 'trajectories', env, fsync: true });
    expect(r2).toMatchObject({ created: false, mode: 0o644 });
    expect(modeOf(f)).toBe('0644');
    expect(fs.readFileSync(f, 'utf8')).toBe('{"a":1}\n{"b":2}\n');
  });

  it('creates exactly 0600 even under a umask that would strip owner bits', () => {
    const root = tempRoot();
    const script = path.join(root, 'c.mjs');
    fs.writeFileSync(
      script,
      `import { privateAppendSync, loadEnvironment } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};\n` +
        `const env = loadEnvironment({ home: process.argv[2] });\n` +
        `const r = privateAppendSync(process.argv[2] + '/trajectories/x.jsonl', 'x\\n', { kind: 'trajectories', env });\n` +
        `console.log(JSON.stringify(r.mode));\n`,
    );
    const r = runNode(script, [path.join(root, 'h')], { umask: 0o277, env: { HERMES_MANAGED: 'false' } });
    expect(lastJson(r)).toBe(0o600);
    expect(modeOf(path.join(root, 'h', 'trajectories', 'x.jsonl'))).toBe('0600');
    expect(modeOf(path.join(root, 'h', 'trajectories'))).toBe('0700');
  });

  it('refuses non-regular files and reports a closed handle', async () => {
    const env = tempEnv();
    const d = path.join(env.home, 'trajectories', 'd.jsonl');
    fs.mkdirSync(d, { recursive: true });
    expect(() => privateAppendSync(d, 'x', { kind: 'trajectories', env })).toThrow(FsPolicyError);
    const h = await openAppendHandle(path.join(env.home, 'trajectories', 'h.jsonl'), { kind: 'trajectories', env });
    await h.appendJson({ n: 1 });
    h.appendSync('{"n":2}\n');
    await h.sync();
    await h.close();
    expect(h.closed).toBe(true);
    expect(() => h.appendSync('x')).toThrow(expect.objectContaining({ code: 'EBADF' }) as Error);
    expect(fs.readFileSync(path.join(env.home, 'trajectories', 'h.jsonl'), 'utf8')).toBe('{"n":1}\n{"n":2}\n');
  });
});

describe('append handle group commit', () => {
  it('concurrent async appends land whole and in call order, each promise after its write', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'g.jsonl');
    const h = await openAppendHandle(f, { kind: 'trajectories', env });
    const sizes = await Promise.all(Array.from({ length: 3000 }, (_, i) => h.appendJson({ i, pad: 'p'.repeat(i % 700) })));
    expect(sizes[0]).toBe(17);
    await h.close();
    const lines = fs.readFileSync(f, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(3000);
    expect(lines.map((l) => (JSON.parse(l) as { i: number }).i)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  });

  it('a failed batch rejects every append in it and leaves no partial line', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'g.jsonl');
    const h = await openAppendHandle(f, { kind: 'trajectories', env });
    await h.append('{"kept":1}\n');
    const { setFaultHook } = await import('../src/internal/io.js');
    setFaultHook((req) => {
      if (req.op === 'write') throw Object.assign(new Error('EIO'), { code: 'EIO' });
      return undefined;
    });
    const results = await Promise.allSettled([h.append('{"a":1}\n'), h.appendJson({ b: 2 })]);
    setFaultHook(undefined);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    await h.close();
    expect(fs.readFileSync(f, 'utf8')).toBe('{"kept":1}\n');
  });
});

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
