import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastJson, modeOf, runNode, tempRoot } from '@hermes/test-utils';
import {
  appendJsonLine,
  appendJsonLineSync,
  FsPolicyError,
  openAppendHandle,
  privateAppendSync,
  setLogger,
  silentLogger,
} from '../src/index.js';
import { tempEnv } from './helpers.js';

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
    expect(() => h.appendSync('x')).toThrow(expect.objectContaining({ code: 'ECLOSED' }) as Error);
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
