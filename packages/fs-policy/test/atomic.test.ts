import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { modeOf } from '@hermes/test-utils';
import { setFaultHook, type Req } from '../src/internal/io.js';
import {
  anchorInfo,
  atomicWrite,
  atomicWriteJson,
  atomicWriteJsonSync,
  atomicWriteSync,
  FsPolicyError,
  selectFileMode,
  setLogger,
  silentLogger,
} from '../src/index.js';
import { ls, tempEnv } from './helpers.js';

setLogger(silentLogger);
afterEach(() => {
  setFaultHook(undefined);
});

describe('final mode selection: explicit > existing > kind', () => {
  it('property over all modes', () => {
    const mode = fc.integer({ min: 0, max: 0o7777 });
    fc.assert(
      fc.property(fc.option(mode, { nil: undefined }), fc.option(mode, { nil: undefined }), fc.constantFrom(0o600, 0o640, 0o660), fc.boolean(), (explicit, existing, kindMode, retighten) => {
        const got = selectFileMode({ explicit, existing, kindMode, retighten });
        if (explicit !== undefined) expect(got).toBe(explicit);
        else if (existing !== undefined && !retighten) expect(got).toBe(existing & 0o777);
        else expect(got).toBe(kindMode);
      }),
      { numRuns: 3000 },
    );
  });

  it('on disk: new file gets the kind mode, an existing 0644 keeps it, explicit wins, snapshots re-tighten', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'pending_messages');
    const f = path.join(dir, 'a.json');
    atomicWriteJsonSync(f, { v: 1 }, { kind: 'pending-messages', env });
    expect(modeOf(f)).toBe('0600');
    fs.chmodSync(f, 0o644);
    atomicWriteJsonSync(f, { v: 2 }, { kind: 'pending-messages', env });
    expect(modeOf(f)).toBe('0644');
    fs.chmodSync(f, 0o4755);
    atomicWriteJsonSync(f, { v: 3 }, { kind: 'pending-messages', env });
    expect(modeOf(f)).toBe('0755');
    atomicWriteJsonSync(f, { v: 4 }, { kind: 'pending-messages', env, mode: 0o640 });
    expect(modeOf(f)).toBe('0640');
    const snap = path.join(env.home, 'sessions', 'saved', 's.json');
    atomicWriteJsonSync(snap, { v: 1 }, { kind: 'saved-sessions', env });
    fs.chmodSync(snap, 0o644);
    atomicWriteJsonSync(snap, { v: 2 }, { kind: 'saved-sessions', env });
    expect(modeOf(snap)).toBe('0600');
    expect(JSON.parse(fs.readFileSync(snap, 'utf8'))).toEqual({ v: 2 });
  });

  it('managed state files are umask-derived, payloads stay 0600', () => {
    const env = { ...tempEnv({ managed: true }), umask: 0o007 };
    const db = path.join(env.home, 'state.json');
    atomicWriteSync(db, 'x', { kind: 'state-db', env });
    expect(modeOf(db)).toBe('0660');
    const p = path.join(env.home, 'pending_messages', 'p.json');
    atomicWriteSync(p, 'x', { kind: 'pending-messages', env });
    expect(modeOf(p)).toBe('0600');
  });
});

describe('atomic write basics', () => {
  it('writes, replaces, reports, and leaves no temp file (sync and async)', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'pending_messages', 'x.json');
    const r1 = atomicWriteJsonSync(f, { a: 'ü' }, { kind: 'pending-messages', env });
    expect(r1).toMatchObject({ path: f, requestedPath: f, mode: 0o600, createdFile: true, durable: 'file+dir', createdDirs: [path.dirname(f)] });
    expect(fs.readFileSync(f, 'utf8')).toBe('{\n  "a": "ü"\n}\n');
    const r2 = await atomicWriteJson(f, [1, 2], { kind: 'pending-messages', env, indent: 0 });
    expect(r2.createdFile).toBe(false);
    expect(fs.readFileSync(f, 'utf8')).toBe('[1,2]\n');
    await atomicWrite(f, new Uint8Array([104, 105]), { kind: 'pending-messages', env, durable: 'file' });
    expect(fs.readFileSync(f, 'utf8')).toBe('hi');
    expect(ls(path.dirname(f))).toEqual(['x.json']);
  });

  it('serialisation failures touch nothing', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'pending_messages', 'x.json');
    atomicWriteSync(f, 'old', { kind: 'pending-messages', env });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (const bad of [circular, { n: 10n }, () => 1, undefined]) {
      let err: unknown;
      try {
        atomicWriteJsonSync(f, bad, { kind: 'pending-messages', env });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(FsPolicyError);
      expect(err).toMatchObject({ code: 'ESERIALIZE', step: 'serialize', path: f });
    }
    expect(fs.readFileSync(f, 'utf8')).toBe('old');
    expect(ls(path.dirname(f))).toEqual(['x.json']);
  });

  it('overwrite:false is an atomic no-clobber create', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'sessions', 'saved', 'a.md');
    atomicWriteSync(f, 'first', { kind: 'saved-sessions', env, overwrite: false });
    expect(() => atomicWriteSync(f, 'second', { kind: 'saved-sessions', env, overwrite: false })).toThrow(
      expect.objectContaining({ code: 'EEXIST' }) as Error,
    );
    expect(fs.readFileSync(f, 'utf8')).toBe('first');
    expect(ls(path.dirname(f))).toEqual(['a.md']);
  });

  it('refuses directories and special files as targets', () => {
    const env = tempEnv();
    const d = path.join(env.home, 'pending_messages', 'dir');
    fs.mkdirSync(d, { recursive: true });
    expect(() => atomicWriteSync(d, 'x', { kind: 'pending-messages', env })).toThrow(expect.objectContaining({ code: 'EISDIR' }) as Error);
  });
});

// Every step of an atomic write, failed through the fault port: the target is byte-identical to before,
// no temp (or rollback) file remains, and the error names the step.
const FAULT_STEPS: { step: string; op?: string; short?: boolean }[] = [
  { step: 'open', op: 'open' },
  { step: 'write', op: 'write' },
  { step: 'short-write', op: 'write', short: true },
  { step: 'fchmod', op: 'fchmod' },
  { step: 'fsync', op: 'fsync' },
  { step: 'close', op: 'close' },
  { step: 'rename', op: 'rename' },
  { step: 'fsync-dir', op: 'fsync' },
];

function injector(target: { step: string; op?: string; short?: boolean }): (req: Req) => { result: unknown } | undefined {
  return (req) => {
    if (target.short === true) {
      return req.step === 'write' && req.op === 'write' ? { result: 0 } : undefined;
    }
    const stepOfReq = target.step === 'fsync-dir' ? req.step === 'fsync-dir' : req.step === target.step;
    if (stepOfReq && (target.op === undefined || req.op === target.op) && !req.path.includes('/nonexistent')) {
      const err = Object.assign(new Error(`injected failure at ${target.step}`), { code: 'EIO', errno: -5 });
      throw err;
    }
    return undefined;
  };
}

describe('fault injection at every step', () => {
  for (const target of FAULT_STEPS) {
    for (const existing of [true, false]) {
      for (const mode of ['sync', 'async'] as const) {
        it(`${target.step} (${existing ? 'replacing' : 'creating'}, ${mode})`, async () => {
          const env = tempEnv();
          const dir = path.join(env.home, 'pending_messages');
          fs.mkdirSync(dir, { mode: 0o700 });
          const f = path.join(dir, 'p.json');
          if (existing) fs.writeFileSync(f, 'ORIGINAL CONTENT');
          setFaultHook(injector(target));
          let err: unknown;
          try {
            if (mode === 'sync') atomicWriteSync(f, 'NEW CONTENT', { kind: 'pending-messages', env });
            else await atomicWrite(f, 'NEW CONTENT', { kind: 'pending-messages', env });
          } catch (e) {
            err = e;
          }
          setFaultHook(undefined);
          expect(err).toBeInstanceOf(FsPolicyError);
          const e = err as FsPolicyError;
          expect(e.step).toBe(target.step);
          expect(e.code).toBe(target.short === true ? 'ESHORT_WRITE' : 'EIO');
          expect(e.hint.length).toBeGreaterThan(10);
          if (existing) expect(fs.readFileSync(f, 'utf8')).toBe('ORIGINAL CONTENT');
          else expect(fs.existsSync(f)).toBe(false);
          expect(ls(dir)).toEqual(existing ? ['p.json'] : []);
        });
      }
    }
  }
});

describe('the temp file itself', () => {
  it('a file already at the temp name is never opened or overwritten: EEXIST where the name is made, the planted bytes intact', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'pending_messages');
    fs.mkdirSync(dir, { mode: 0o700 });
    const f = path.join(dir, 'p.json');
    fs.writeFileSync(f, 'ORIGINAL');
    let planted: string | undefined;
    let step: string | undefined;
    setFaultHook((req) => {
      // The temp name is made by the exclusive open of the named temp, or by the link of the unnamed one (O_TMPFILE).
      const made =
        req.op === 'open' && ((req.args[1] as number) & fs.constants.O_CREAT) !== 0 ? req.args[0] : req.op === 'link' && typeof req.args[0] === 'number' ? req.args[1] : undefined;
      if (planted === undefined && req.step === req.op && typeof made === 'string') {
        // Someone (or a stale file) holds exactly the name this write picked, as the name is made.
        planted = path.join(dir, path.basename(made));
        step = req.step;
        fs.writeFileSync(planted, 'PLANTED');
      }
      return undefined;
    });
    let err: unknown;
    try {
      atomicWriteSync(f, 'NEW', { kind: 'pending-messages', env });
    } catch (e) {
      err = e;
    }
    setFaultHook(undefined);
    expect(planted).toMatch(/\/\.p\.json\.\d+-\d+\.[0-9a-f]{12}\.tmp$/);
    expect(step).toBe(anchorInfo().mode === 'native' ? 'link' : 'open');
    expect(err).toMatchObject({ code: 'EEXIST', step });
    expect(fs.readFileSync(planted ?? '', 'utf8')).toBe('PLANTED');
    expect(fs.readFileSync(f, 'utf8')).toBe('ORIGINAL');
  });

  for (const [title, final] of [
    ['a new file', undefined],
    ['an explicit 0640', 0o640],
  ] as const) {
    it(`the temp is never wider than 0600 while written, and has its final mode before the rename (${title})`, () => {
      const env = tempEnv();
      const f = path.join(env.home, 'pending_messages', 'p.json');
      const seen: { step: string; mode: string }[] = [];
      setFaultHook((req) => {
        if (req.op === 'write' || (req.op === 'fsync' && req.step === 'fsync')) {
          seen.push({ step: req.step, mode: (fs.fstatSync(req.args[0] as number).mode & 0o7777).toString(8) });
        }
        if (req.op === 'rename') {
          seen.push({ step: 'rename', mode: (fs.lstatSync(req.args[0] as string).mode & 0o7777).toString(8) });
        }
        return undefined;
      });
      atomicWriteSync(f, 'x'.repeat(100), { kind: 'pending-messages', env, ...(final === undefined ? {} : { mode: final }) });
      setFaultHook(undefined);
      const want = final === undefined ? '600' : '640';
      expect(seen).toEqual([
        { step: 'write', mode: '600' },
        { step: 'fsync', mode: want },
        { step: 'rename', mode: want },
      ]);
    });
  }
});
