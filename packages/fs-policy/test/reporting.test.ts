import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeNeeds, modeOf, tempRoot } from '@hermes/test-utils';
import { setFaultHook } from '../src/internal/io.js';
import {
  appendJsonLineSync,
  atomicWriteSync,
  FsPolicyError,
  getLogger,
  hintFor,
  loadEnvironment,
  openAppendHandleSync,
  privateAppend,
  reconcileDirSync,
  secureMkdirSync,
  setLogger,
  silentLogger,
  stderrLogger,
  type FsPolicyLogger,
} from '../src/index.js';
import { ls, tempEnv } from './helpers.js';

afterEach(() => {
  setFaultHook(undefined);
  setLogger(silentLogger);
});

function capture(): { lines: string[]; logger: FsPolicyLogger } {
  const lines: string[] = [];
  const push = (level: string) => (message: string, fields?: Readonly<Record<string, unknown>>) => {
    lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  };
  return { lines, logger: { debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') } };
}

describe('errors and logging', () => {
  it('every error carries code, errno, path, step, uid and a one-line fix', () => {
    const env = tempEnv();
    const file = path.join(env.home, 'nope', 'x.json');
    setFaultHook((req) => {
      if (req.op === 'mkdir') throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES', errno: -13 });
      return undefined;
    });
    let err: unknown;
    try {
      atomicWriteSync(file, 'x', { kind: 'pending-messages', env });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FsPolicyError);
    const e = err as FsPolicyError;
    expect({ code: e.code, errno: e.errno, path: e.path, step: e.step }).toEqual({
      code: 'EACCES',
      errno: -13,
      path: path.join(env.home, 'nope'),
      step: 'mkdir',
    });
    expect(e.uid).toBe(process.geteuid?.());
    expect(e.toLine()).toContain('hermes-fs doctor --fix');
    expect(e.toLine()).not.toContain('\n');
  });

  it('has a specific hint for each code operators meet', () => {
    for (const code of ['EACCES', 'ENOSPC', 'EROFS', 'ENOENT', 'ENOTDIR', 'EISDIR', 'ELOOP', 'ESYMLINK_ESCAPE', 'EDANGLING_LINK', 'ESERIALIZE', 'ESHORT_WRITE', 'EMANAGED_MISSING', 'EPROFILE_MISSING', 'ENOTREGULAR', 'EMFILE']) {
      expect(hintFor(code, '/p', 1, 2), code).not.toBe(hintFor('EWHATEVER', '/p', 1, 2));
    }
  });

  it('a kind that is neither a name nor a registry entry is refused before anything is created', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'moa-traces');
    for (const bad of [{ kind: 'moa-traces' }, { name: 'x', dir: 'x', dirMode: 0o70000, file: { mode: 0o600 } }, null, 42]) {
      expect(() => secureMkdirSync(dir, bad as never, { env })).toThrow(/^not an artifact kind: /);
      expect(() => appendJsonLineSync(path.join(dir, 'a.jsonl'), {}, { kind: bad as never, env })).toThrow(/^not an artifact kind: /);
    }
    expect(() => secureMkdirSync(dir, 'moa_traces' as never, { env })).toThrow('unknown artifact kind "moa_traces"');
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('a caller-defined kind with no home directory (dir: null) is accepted and its mode applied', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'custom');
    const custom = {
      name: 'custom-2770',
      description: 'a caller-defined kind',
      dir: null,
      dirMode: 0o2770,
      honoursHomeMode: false,
      requiredWhenManaged: false,
      ownership: false,
      file: { mode: 0o600, managedMode: 0o600, managedMaxMode: 0o600, retighten: false, ceiling: 0o600, managedCeiling: 0o600, secret: false },
    };
    expect(secureMkdirSync(dir, custom, { env, root: env.home }).mode).toBe(0o2770);
    expect(fs.statSync(dir).mode & 0o7777).toBe(0o2770);
  });

  it('the default logger prints warnings and errors to stderr only; the embedder can replace it', () => {
    setLogger(undefined);
    expect(getLogger()).toBe(stderrLogger);
    const writes: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => {
      writes.push(chunk);
      return true;
    });
    try {
      stderrLogger.debug('quiet');
      stderrLogger.info('quiet');
      stderrLogger.warn('careful', { path: '/x', code: 'EPERM', n: 3, o: { a: 1 } });
      stderrLogger.error('broken', { path: '/y' });
    } finally {
      process.stderr.write = original;
    }
    expect(writes).toEqual([
      'hermes fs-policy warning: careful path="/x" code="EPERM" n=3 o={"a":1}\n',
      'hermes fs-policy error: broken path="/y"\n',
    ]);
    const c = capture();
    setLogger(c.logger);
    expect(getLogger()).toBe(c.logger);
  });

  it('a refused chmod of a directory we do not own is a reported warning, not a throw', () => {
    const c = capture();
    setLogger(c.logger);
    const env = tempEnv();
    const dir = path.join(env.home, 'logs');
    fs.mkdirSync(dir, { mode: 0o755 });
    setFaultHook((req) => {
      if (req.op === 'fchmod') throw Object.assign(new Error('EPERM: operation not permitted'), { code: 'EPERM' });
      return undefined;
    });
    const r = reconcileDirSync(dir, 'logs', { env });
    expect(r).toMatchObject({ action: 'left', before: 0o755, after: 0o755, expected: 0o700 });
    expect(r.warnings[0]).toContain('refused (EPERM)');
    expect(c.lines.some((l) => l.startsWith('warn ') && l.includes(dir))).toBe(true);
    expect(modeOf(dir)).toBe('0755');
  });
});

describe('append under faults', () => {
  it('a short append never truncates: the torn fragment stays, the next record of the handle starts a new line', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 't.jsonl');
    appendJsonLineSync(f, { first: true }, { kind: 'trajectories', env });
    const h = openAppendHandleSync(f, { kind: 'trajectories', env });
    let writes = 0;
    setFaultHook((req) => {
      if (req.op !== 'write') return undefined;
      writes++;
      if (writes === 1) {
        fs.appendFileSync(f, '{"part'); // what the device accepted before it refused the rest
        return { result: 6 };
      }
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC', errno: -28 });
    });
    let err: unknown;
    try {
      h.appendJsonSync({ second: 'x'.repeat(100) });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'ENOSPC', step: 'write', errno: -28 });
    expect((err as Error).message).toContain('after 6 of 114 bytes (ENOSPC)');
    expect((err as Error).message).toContain('the file ends with the partial record');
    setFaultHook(undefined);
    // Nothing was cut: a concurrent writer's line after our fragment would have survived too.
    expect(fs.readFileSync(f, 'utf8')).toBe('{"first":true}\n{"part');
    h.appendJsonSync({ third: 3 });
    h.closeSync();
    expect(fs.readFileSync(f, 'utf8')).toBe('{"first":true}\n{"part\n{"third":3}\n');
  });

  it('a short append whose newline still fits is terminated at once; another writer\'s line is never touched', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 't.jsonl');
    appendJsonLineSync(f, { first: true }, { kind: 'trajectories', env });
    let writes = 0;
    setFaultHook((req) => {
      if (req.op !== 'write') return undefined;
      writes++;
      if (writes === 1) {
        fs.appendFileSync(f, '{"pa'); // our fragment
        fs.appendFileSync(f, '{"other":"writer"}\n'); // another process's line lands right after it
        return { result: 4 };
      }
      return undefined;
    });
    expect(() => appendJsonLineSync(f, { second: 2 }, { kind: 'trajectories', env })).toThrow(
      expect.objectContaining({ code: 'ETORN_RECORD', step: 'short-write' }) as Error,
    );
    setFaultHook(undefined);
    expect(fs.readFileSync(f, 'utf8')).toBe('{"first":true}\n{"pa{"other":"writer"}\n\n');
  });

  it('an fsync failure on append is typed and names the step', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 't.jsonl');
    setFaultHook((req) => {
      if (req.op === 'fsync' && req.step === 'fsync') throw Object.assign(new Error('EIO'), { code: 'EIO' });
      return undefined;
    });
    await expect(privateAppend(f, 'x\n', { kind: 'trajectories', env, fsync: true })).rejects.toMatchObject({ code: 'EIO', step: 'fsync' });
    expect(ls(path.dirname(f))).toEqual(['t.jsonl']);
  });
});

describeNeeds(['root'], 'ownership (root only)', () => {
  it('HERMES_UID/HERMES_GID are applied to every directory and file this package creates (unmanaged)', () => {
    const home = path.join(tempRoot(), 'h');
    const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false', HERMES_UID: '4242', HERMES_GID: '4343' } });
    const mk = secureMkdirSync(path.join(home, 'pending_messages'), 'pending-messages', { env });
    const f = path.join(home, 'pending_messages', 'p.json');
    atomicWriteSync(f, '{}', { kind: 'pending-messages', env });
    const t = path.join(home, 'trajectories', 't.jsonl');
    appendJsonLineSync(t, {}, { kind: 'trajectories', env });
    for (const p of [...mk.created, f, t, path.dirname(t)]) {
      const st = fs.statSync(p);
      expect([p, st.uid, st.gid]).toEqual([p, 4242, 4343]);
    }
    expect(modeOf(f)).toBe('0600');
  });

  it('as root, a replaced file of the home\'s owner keeps its owner', () => {
    const env = tempEnv();
    fs.chownSync(env.home, 1234, 5678);
    const f = path.join(env.home, 'sessions', 'x.json');
    fs.mkdirSync(path.dirname(f));
    fs.writeFileSync(f, 'old');
    fs.chownSync(f, 1234, 5678);
    atomicWriteSync(f, 'new', { kind: 'sessions', env });
    expect([fs.statSync(f).uid, fs.statSync(f).gid]).toEqual([1234, 5678]);
    expect(fs.readFileSync(f, 'utf8')).toBe('new');
  });

  it('as root, a file of an unrelated uid is never replaced (EFOREIGN_OWNER), its content kept', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'sessions', 'x.json');
    fs.mkdirSync(path.dirname(f));
    fs.writeFileSync(f, 'theirs');
    fs.chownSync(f, 4321, 4321);
    expect(() => atomicWriteSync(f, 'new', { kind: 'sessions', env })).toThrow(
      expect.objectContaining({ code: 'EFOREIGN_OWNER', path: f }) as Error,
    );
    expect(fs.readFileSync(f, 'utf8')).toBe('theirs');
    expect(ls(path.dirname(f))).toEqual(['x.json']);
  });
});
