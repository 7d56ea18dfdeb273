/**
 * The write and append protocols, syscall by syscall. Each test records the requests a primitive makes (through
 * the fault port) and compares them with the literal sequence the protocol promises: what is opened, written,
 * fsynced, linked and renamed, under which step, in which order. The refusal paths are pinned the same way: the
 * exact code, step, path and message an operator reads, and that nothing was left behind.
 *
 * Only requests on the target's directory are compared (reaching the home differs with the euid), so the same
 * sequences hold for root and for an unprivileged user.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeNeeds } from '@hermes/test-utils';
import { setFaultHook, type Req } from '../src/internal/io.js';
import {
  anchorInfo,
  appendJsonLine,
  appendJsonLineSync,
  atomicWrite,
  atomicWriteJson,
  atomicWriteJsonSync,
  atomicWriteSync,
  FsPolicyError,
  fsyncDirectory,
  fsyncDirectorySync,
  loadEnvironment,
  openAppendHandle,
  openAppendHandleSync,
  privateAppend,
  privateAppendSync,
  setLogger,
  silentLogger,
  type FsPolicyLogger,
} from '../src/index.js';
import { caught, ls, requestsOf, tempEnv } from './helpers.js';

afterEach(() => {
  setFaultHook(undefined);
  setLogger(silentLogger);
});

const errno = (code: string, n: number): Error => Object.assign(new Error(`${code}: injected`), { code, errno: n });

/** `op step path` for every request under `<home>/<sub>`; temp and rollback names shown as <tmp> and <bak>. */
function recorder(home: string, sub = 'sessions'): { lines: string[]; keep: (r: Req) => void } {
  const lines: string[] = [];
  const base = path.join(home, sub);
  return {
    lines,
    keep: (r: Req) => {
      if (r.path !== base && !r.path.startsWith(`${base}/`)) return;
      const rel = path.relative(home, r.path).replace(/\/\.[^/]*\.(tmp|bak)$/, '/<$1>');
      lines.push(`${r.op} ${r.step} ${rel}`);
    },
  };
}

function traced(home: string, fn: () => unknown, sub?: string): string[] {
  const rec = recorder(home, sub);
  for (const r of requestsOf(fn)) rec.keep(r);
  return rec.lines;
}

async function tracedAsync(home: string, fn: () => Promise<unknown>): Promise<string[]> {
  const rec = recorder(home);
  setFaultHook((r) => {
    rec.keep(r);
    return undefined;
  });
  try {
    await fn();
  } finally {
    setFaultHook(undefined);
  }
  return rec.lines;
}

async function caughtAsync(p: Promise<unknown>): Promise<FsPolicyError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof FsPolicyError) return e;
    throw e;
  }
  throw new Error('expected an FsPolicyError');
}

/** Code, step, path and message of the FsPolicyError `fn` throws. */
function shape(fn: () => unknown): { code: string; step: string; path: string; message: string } {
  const e = caught(fn);
  return { code: e.code, step: e.step, path: e.path, message: e.detail };
}

async function shapeAsync(p: Promise<unknown>): Promise<{ code: string; step: string; path: string; message: string }> {
  const e = await caughtAsync(p);
  return { code: e.code, step: e.step, path: e.path, message: e.detail };
}

function sessions(): { env: ReturnType<typeof tempEnv>; dir: string; file: string } {
  const env = tempEnv();
  const dir = path.join(env.home, 'sessions');
  return { env, dir, file: path.join(dir, 's.json') };
}

/** A fresh home with an existing sessions/ directory, and the append target a.jsonl in it. */
function appendDir(): { env: ReturnType<typeof tempEnv>; dir: string; file: string } {
  const { env, dir } = sessions();
  fs.mkdirSync(dir, { mode: 0o700 });
  return { env, dir, file: path.join(dir, 'a.jsonl') };
}

const COMMIT_TAIL = ['rename rename sessions/s.json', 'open fsync-dir sessions', 'fsync fsync-dir sessions', 'close release sessions'];
const TEMP_FILE = ['open open sessions/s.json', 'write write sessions/s.json', 'fchmod fchmod sessions/s.json'];
/**
 * With the native layer the temp has no name (O_TMPFILE) until it is complete and fsynced: one link names it (the
 * temp name, or the target itself under `overwrite: false`), then it is closed. Otherwise the named temp is closed.
 */
const UNNAMED = anchorInfo().mode === 'native';
const NAME_TEMP = UNNAMED ? ['link link sessions/s.json', 'close close sessions/s.json'] : ['close close sessions/s.json'];
/** The temp as messages name it: its path, or (unnamed) the directory it is made in. */
const tempShown = (dir: string): string => (UNNAMED ? `an unnamed temp file in ${dir}` : `${dir}/\\.s\\.json\\.[^ ]+\\.tmp`);

describe('atomicWrite: the protocol, request by request', () => {
  it('a new file in a new directory: the directory is made and fsynced, then temp, data, mode, fsync, rename, directory fsync', () => {
    const { env, file } = sessions();
    expect(traced(env.home, () => atomicWriteSync(file, 'one', { kind: 'sessions', env }))).toEqual([
      'open resolve sessions',
      'mkdir mkdir sessions',
      'open mkdir sessions',
      'fstat mkdir sessions',
      'fchmod fchmod sessions',
      'fstat mkdir sessions',
      'lstat resolve sessions/s.json',
      ...TEMP_FILE,
      'fstat fsync sessions/s.json',
      'fsync fsync sessions/s.json',
      ...NAME_TEMP,
      ...COMMIT_TAIL,
      'close release sessions',
    ]);
    expect(fs.readFileSync(file, 'utf8')).toBe('one');
    expect(fs.statSync(file).mode & 0o7777).toBe(0o600);
  });

  it('a replacement keeps a hard link to the previous version until the directory fsync succeeded, then drops it', () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    expect(traced(env.home, () => atomicWriteSync(file, 'two', { kind: 'sessions', env }))).toEqual([
      'open resolve sessions',
      'lstat resolve sessions/s.json',
      ...TEMP_FILE,
      'fstat fsync sessions/s.json',
      'fsync fsync sessions/s.json',
      ...NAME_TEMP,
      'link link sessions/<bak>',
      ...COMMIT_TAIL,
      'unlink unlink sessions/<bak>',
      'close release sessions',
    ]);
    expect(ls(path.dirname(file))).toEqual(['s.json']);
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
  });

  it("durable: 'file' fsyncs the file only: no identity, no rollback link, no directory fsync", () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    const lines = traced(env.home, () => {
      expect(atomicWriteSync(file, 'two', { kind: 'sessions', env, durable: 'file' }).durable).toBe('file');
    });
    expect(lines).toEqual([
      'open resolve sessions',
      'lstat resolve sessions/s.json',
      ...TEMP_FILE,
      'fsync fsync sessions/s.json',
      ...NAME_TEMP,
      'rename rename sessions/s.json',
      'close release sessions',
    ]);
  });

  it('overwrite: false commits with link(2) (which never replaces): the unnamed temp itself, or the named temp, then removes the temp name', () => {
    const { env, file } = sessions();
    atomicWriteSync(path.join(path.dirname(file), 'other'), 'x', { kind: 'sessions', env });
    expect(traced(env.home, () => atomicWriteSync(file, 'one', { kind: 'sessions', env, overwrite: false }))).toEqual([
      'open resolve sessions',
      'lstat resolve sessions/s.json',
      ...TEMP_FILE,
      'fstat fsync sessions/s.json',
      'fsync fsync sessions/s.json',
      ...(UNNAMED ? NAME_TEMP : ['close close sessions/s.json', 'link link sessions/s.json', 'unlink unlink sessions/<tmp>']),
      'open fsync-dir sessions',
      'fsync fsync-dir sessions',
      'close release sessions',
      'close release sessions',
    ]);
    expect(ls(path.dirname(file))).toEqual(['other', 's.json']);
  });

  it('the async form makes the same requests as the sync form', async () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    const sync = traced(env.home, () => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    const lines = await tracedAsync(env.home, () => atomicWrite(file, 'three', { kind: 'sessions', env }));
    expect(lines).toEqual(sync);
    expect(fs.readFileSync(file, 'utf8')).toBe('three');
  });

  it('without env, the environment comes from the process (HERMES_HOME)', async () => {
    const { env, file } = sessions();
    const saved = { home: process.env.HERMES_HOME, managed: process.env.HERMES_MANAGED };
    process.env.HERMES_HOME = env.home;
    process.env.HERMES_MANAGED = 'false';
    try {
      expect(atomicWriteSync(file, 'one', { kind: 'sessions' }).path).toBe(file);
      expect((await atomicWrite(file, 'two', { kind: 'sessions' })).path).toBe(file);
      expect((await atomicWriteJson(file, { n: 3 }, { kind: 'sessions' })).path).toBe(file);
      expect(privateAppendSync(`${file}l`, 'a\n', { kind: 'sessions' }).bytes).toBe(2);
      expect((await privateAppend(`${file}l`, 'b\n', { kind: 'sessions' })).bytes).toBe(2);
      const h = openAppendHandleSync(`${file}l`, { kind: 'sessions' });
      h.appendSync('c\n');
      h.closeSync();
      const h2 = await openAppendHandle(`${file}l`, { kind: 'sessions' });
      await h2.append('d\n');
      await h2.close();
    } finally {
      if (saved.home === undefined) delete process.env.HERMES_HOME;
      else process.env.HERMES_HOME = saved.home;
      if (saved.managed === undefined) delete process.env.HERMES_MANAGED;
      else process.env.HERMES_MANAGED = saved.managed;
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('{\n  "n": 3\n}\n');
    expect(fs.readFileSync(`${file}l`, 'utf8')).toBe('a\nb\nc\nd\n');
  });
});

describe('atomicWrite: what is refused, exactly', () => {
  it('a directory at the target', () => {
    const { env, dir } = sessions();
    fs.mkdirSync(path.join(dir, 's.json'), { recursive: true });
    expect(shape(() => atomicWriteSync(path.join(dir, 's.json'), 'x', { kind: 'sessions', env }))).toEqual({
      code: 'EISDIR',
      step: 'resolve',
      path: path.join(dir, 's.json'),
      message: `${path.join(dir, 's.json')} is a directory`,
    });
  });

  it('a FIFO at the target is refused without opening it (no hang)', () => {
    const { env, dir, file } = sessions();
    fs.mkdirSync(dir, { mode: 0o700 });
    execFileSync('mkfifo', [file]);
    expect(shape(() => atomicWriteSync(file, 'x', { kind: 'sessions', env }))).toEqual({
      code: 'ENOTREGULAR',
      step: 'resolve',
      path: file,
      message: `${file} is not a regular file (a FIFO, socket or device)`,
    });
    expect(ls(dir)).toEqual(['s.json']);
  });

  it('a link that does not name a file (".", "..", "sub/") is refused and nothing is created', () => {
    const { env, dir, file } = sessions();
    fs.mkdirSync(path.join(dir, 'sub'), { recursive: true, mode: 0o700 });
    for (const text of ['.', '..', 'sub/', 'sub/..']) {
      fs.rmSync(file, { force: true });
      fs.symlinkSync(text, file);
      expect(shape(() => atomicWriteSync(file, 'x', { kind: 'sessions', env })), text).toEqual({
        code: 'ENOTREGULAR',
        step: 'resolve',
        path: file,
        message: `${file} -> ${text} does not name a file`,
      });
      expect(ls(dir)).toEqual(['s.json', 'sub']);
      expect(ls(path.join(dir, 'sub'))).toEqual([]);
    }
  });

  it('a dangling link (missing file, or missing directory on the way) is refused and its target never created', () => {
    const { env, dir, file } = sessions();
    fs.mkdirSync(dir, { mode: 0o700 });
    for (const text of ['missing.json', 'nodir/missing.json', path.join(dir, 'abs-missing.json')]) {
      fs.rmSync(file, { force: true });
      fs.symlinkSync(text, file);
      expect(shape(() => atomicWriteSync(file, 'x', { kind: 'sessions', env })), text).toEqual({
        code: 'EDANGLING_LINK',
        step: 'resolve',
        path: file,
        message: `${file} -> ${text} is a dangling link; refusing to create its target`,
      });
      expect(ls(dir)).toEqual(['s.json']);
    }
  });

  it('a relative link and an absolute link inside the home are followed; the real file is replaced', () => {
    const { env, dir, file } = sessions();
    fs.mkdirSync(path.join(dir, 'real'), { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(dir, 'real', 'r.json'), 'old', { mode: 0o600 });
    fs.symlinkSync('real/r.json', file);
    const r = atomicWriteSync(file, 'rel', { kind: 'sessions', env });
    expect({ path: r.path, requestedPath: r.requestedPath, createdFile: r.createdFile }).toEqual({
      path: path.join(dir, 'real', 'r.json'),
      requestedPath: file,
      createdFile: false,
    });
    fs.rmSync(file);
    fs.symlinkSync(path.join(dir, 'real', 'r.json'), file);
    expect(atomicWriteSync(file, 'abs', { kind: 'sessions', env }).path).toBe(path.join(dir, 'real', 'r.json'));
    expect(fs.readFileSync(path.join(dir, 'real', 'r.json'), 'utf8')).toBe('abs');
    expect(fs.lstatSync(file).isSymbolicLink()).toBe(true);
  });

  it('forty links are followed; the forty-first is ELOOP, named where the walk stopped', () => {
    const { env, dir } = sessions();
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.writeFileSync(path.join(dir, 'end'), 'old', { mode: 0o600 });
    // l0 -> l1 -> ... -> l39 -> end: forty links.
    for (let i = 0; i < 40; i++) fs.symlinkSync(i === 39 ? 'end' : `l${String(i + 1)}`, path.join(dir, `l${String(i)}`));
    expect(atomicWriteSync(path.join(dir, 'l0'), 'new', { kind: 'sessions', env }).path).toBe(path.join(dir, 'end'));
    fs.symlinkSync('l0', path.join(dir, 'm'));
    expect(shape(() => atomicWriteSync(path.join(dir, 'm'), 'x', { kind: 'sessions', env }))).toEqual({
      code: 'ELOOP',
      step: 'resolve',
      path: path.join(dir, 'l39'),
      message: `too many levels of symbolic links at ${path.join(dir, 'l39')}`,
    });
    expect(fs.readFileSync(path.join(dir, 'end'), 'utf8')).toBe('new');
  });

  it('overwrite: false on an existing file is EEXIST before any temp file', () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    const lines: string[] = [];
    const e = shape(() => {
      lines.push(...traced(env.home, () => atomicWriteSync(file, 'two', { kind: 'sessions', env, overwrite: false })));
    });
    expect(e).toEqual({ code: 'EEXIST', step: 'resolve', path: file, message: `${file} already exists` });
    expect(fs.readFileSync(file, 'utf8')).toBe('one');
    expect(ls(path.dirname(file))).toEqual(['s.json']);
  });

  it('overwrite: false when another writer creates the file just before the commit: EEXIST, their file intact, no temp', () => {
    const { env, file } = sessions();
    atomicWriteSync(path.join(path.dirname(file), 'other'), 'x', { kind: 'sessions', env });
    setFaultHook((r) => {
      if (r.op === 'link' && r.step === 'link') fs.writeFileSync(file, 'theirs');
      return undefined;
    });
    const e = caught(() => atomicWriteSync(file, 'mine', { kind: 'sessions', env, overwrite: false }));
    expect({ code: e.code, step: e.step, path: e.path }).toEqual({ code: 'EEXIST', step: 'link', path: file });
    expect(e.detail.startsWith(`link ${file} failed: EEXIST`)).toBe(true);
    expect(fs.readFileSync(file, 'utf8')).toBe('theirs');
    expect(ls(path.dirname(file))).toEqual(['other', 's.json']);
  });

  it('a write that makes no progress is ESHORT_WRITE, and the temp file is removed', () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    setFaultHook((r) => (r.op === 'write' ? { result: 0 } : undefined));
    const e = shape(() => atomicWriteSync(file, 'twelve bytes', { kind: 'sessions', env }));
    expect(e.code).toBe('ESHORT_WRITE');
    expect(e.step).toBe('short-write');
    expect(e.path).toBe(file);
    expect(e.message).toMatch(new RegExp(`^short write to ${tempShown(path.dirname(file))} \\(for ${file}\\): 0 of 12 bytes accepted$`));
    expect(fs.readFileSync(file, 'utf8')).toBe('one');
    expect(ls(path.dirname(file))).toEqual(['s.json']);
  });

  it('a temp file that cannot be created names the temp file and the target', () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    setFaultHook((r) => {
      if (r.op === 'open' && r.step === 'open') throw errno('EDQUOT', -122);
      return undefined;
    });
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    expect({ code: e.code, step: e.step, path: e.path, errno: e.errno }).toEqual({ code: 'EDQUOT', step: 'open', path: file, errno: -122 });
    expect(e.detail).toMatch(new RegExp(`^create the temp file ${path.dirname(file)}/\\.s\\.json\\.[^ ]+\\.tmp failed: EDQUOT: injected$`));
  });

  it('a failed rename drops the rollback link and the temp file; the previous version stays', () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    setFaultHook((r) => {
      if (r.op === 'rename') throw errno('EIO', -5);
      return undefined;
    });
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    expect({ code: e.code, step: e.step, path: e.path, message: e.detail }).toEqual({
      code: 'EIO',
      step: 'rename',
      path: file,
      message: `rename ${file} failed: EIO: injected`,
    });
    setFaultHook(undefined);
    expect(ls(path.dirname(file))).toEqual(['s.json']);
    expect(fs.readFileSync(file, 'utf8')).toBe('one');
  });

  it('without hard links (link refused), a replacement still commits; only the rollback copy is missing', () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    setFaultHook((r) => {
      if (r.op === 'link') throw errno('EPERM', -1);
      return undefined;
    });
    const r = atomicWriteSync(file, 'two', { kind: 'sessions', env });
    expect(r.warnings).toEqual([]);
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
    expect(ls(path.dirname(file))).toEqual(['s.json']);
  });
});

describe('atomicWrite: a failed directory fsync says what the final state is', () => {
  function failDirFsync(extra?: (r: Req) => void): void {
    setFaultHook((r) => {
      extra?.(r);
      if (r.op === 'fsync' && r.step === 'fsync-dir') throw errno('EIO', -5);
      return undefined;
    });
  }

  it('a replacement is rolled back to the previous version', () => {
    const { env, dir, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    failDirFsync();
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    expect({ code: e.code, step: e.step, path: e.path, errno: e.errno, committed: e.committed, message: e.detail }).toEqual({
      code: 'EIO',
      step: 'fsync-dir',
      path: dir,
      errno: -5,
      committed: false,
      message: `fsync ${dir} failed: EIO: injected; ${file} was restored to its previous version`,
    });
    setFaultHook(undefined);
    expect(fs.readFileSync(file, 'utf8')).toBe('one');
    expect(ls(dir)).toEqual(['s.json']);
  });

  it('a new file is removed again', () => {
    const { env, dir, file } = sessions();
    atomicWriteSync(path.join(dir, 'other'), 'x', { kind: 'sessions', env });
    failDirFsync();
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    expect({ committed: e.committed, message: e.detail }).toEqual({
      committed: false,
      message: `fsync ${dir} failed: EIO: injected; the new file ${file} was removed again`,
    });
    setFaultHook(undefined);
    expect(ls(dir)).toEqual(['other']);
  });

  it('overwrite: false: the linked new file is removed again', () => {
    const { env, dir, file } = sessions();
    atomicWriteSync(path.join(dir, 'other'), 'x', { kind: 'sessions', env });
    failDirFsync();
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env, overwrite: false }));
    expect(e.committed).toBe(false);
    expect(e.detail).toBe(`fsync ${dir} failed: EIO: injected; the new file ${file} was removed again`);
    setFaultHook(undefined);
    expect(ls(dir)).toEqual(['other']);
  });

  it('a new file whose removal fails is reported as committed', () => {
    const { env, dir, file } = sessions();
    atomicWriteSync(path.join(dir, 'other'), 'x', { kind: 'sessions', env });
    failDirFsync((r) => {
      if (r.op === 'unlink' && r.step === 'unlink' && r.path === file) throw errno('EROFS', -30);
    });
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    expect({ committed: e.committed, message: e.detail }).toEqual({
      committed: true,
      message: `fsync ${dir} failed: EIO: injected; the new file ${file} is in place but may not survive a power loss (removing it failed)`,
    });
    setFaultHook(undefined);
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
  });

  it('a replacement whose restore fails is reported as committed, the rollback copy named', () => {
    const { env, dir, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    failDirFsync((r) => {
      if (r.op === 'rename' && r.step === 'rename' && typeof r.args[0] === 'string' && r.args[0].endsWith('.bak')) throw errno('EROFS', -30);
    });
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    setFaultHook(undefined);
    const bak = ls(dir).filter((n) => n.endsWith('.bak'));
    expect(bak).toHaveLength(1);
    expect({ committed: e.committed, message: e.detail }).toEqual({
      committed: true,
      message:
        `fsync ${dir} failed: EIO: injected; the new content of ${file} is in place but may not survive a power loss ` +
        `(restoring the previous version failed); left behind: ${path.join(dir, bak[0] ?? '')}`,
    });
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
  });

  it('a replacement without a rollback copy (no hard links) is reported as committed', () => {
    const { env, dir, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    failDirFsync((r) => {
      if (r.op === 'link') throw errno('EPERM', -1);
    });
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    expect({ committed: e.committed, message: e.detail }).toEqual({
      committed: true,
      message: `fsync ${dir} failed: EIO: injected; the new content of ${file} is in place but may not survive a power loss (no rollback copy: the filesystem has no hard links)`,
    });
    setFaultHook(undefined);
    expect(ls(dir)).toEqual(['s.json']);
  });

  it("another writer's newer version is left alone; the rollback copy is dropped (or named when that fails)", () => {
    for (const unlinkFails of [false, true]) {
      const { env, dir, file } = sessions();
      atomicWriteSync(file, 'one', { kind: 'sessions', env });
      failDirFsync((r) => {
        if (r.op === 'fsync' && r.step === 'fsync-dir') {
          fs.writeFileSync(path.join(dir, 'theirs'), 'theirs');
          fs.renameSync(path.join(dir, 'theirs'), file);
        }
        if (unlinkFails && r.op === 'unlink' && r.path.endsWith('.bak')) throw errno('EROFS', -30);
      });
      const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
      setFaultHook(undefined);
      const bak = ls(dir).filter((n) => n.endsWith('.bak'));
      expect(bak).toHaveLength(unlinkFails ? 1 : 0);
      expect({ committed: e.committed, message: e.detail }).toEqual({
        committed: false,
        message:
          `fsync ${dir} failed: EIO: injected; ${file} was replaced by another writer meanwhile; it is left as that writer made it` +
          (unlinkFails ? `; left behind: ${path.join(dir, bak[0] ?? '')}` : ''),
      });
      expect(fs.readFileSync(file, 'utf8')).toBe('theirs');
    }
  });

  it('an error without an errno carries none', () => {
    const { env, file } = sessions();
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    setFaultHook((r) => {
      if (r.op === 'fsync' && r.step === 'fsync-dir') throw Object.assign(new Error('odd'), { code: 'EODD' });
      return undefined;
    });
    const e = caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env }));
    expect(e.code).toBe('EODD');
    expect(e.errno).toBeUndefined();
    expect('errno' in e && e.errno !== undefined).toBe(false);
  });
});

describe('append: the protocol, request by request', () => {
  it('a new file: an open that finds nothing, an exclusive create, its exact mode; with fsync the name is fsynced too', () => {
    const { env, file } = appendDir();
    expect(traced(env.home, () => privateAppendSync(file, 'x\n', { kind: 'sessions', env, fsync: true }))).toEqual([
      'open resolve sessions',
      'open open sessions/a.jsonl',
      'open open sessions/a.jsonl',
      'fstat open sessions/a.jsonl',
      'fchmod fchmod sessions/a.jsonl',
      'open open sessions',
      'fsync open sessions',
      'close release sessions',
      'close release sessions',
      'write write sessions/a.jsonl',
      'fsync fsync sessions/a.jsonl',
      'close close sessions/a.jsonl',
    ]);
  });

  it('a new file without fsync: no file or directory fsync', () => {
    const { env, file } = appendDir();
    expect(traced(env.home, () => privateAppendSync(file, 'x\n', { kind: 'sessions', env }))).toEqual([
      'open resolve sessions',
      'open open sessions/a.jsonl',
      'open open sessions/a.jsonl',
      'fstat open sessions/a.jsonl',
      'fchmod fchmod sessions/a.jsonl',
      'close release sessions',
      'write write sessions/a.jsonl',
      'close close sessions/a.jsonl',
    ]);
  });

  it('an existing file: one open, checked on the descriptor, never re-moded', () => {
    const { env, file } = appendDir();
    fs.writeFileSync(file, 'old\n', { mode: 0o640 });
    fs.chmodSync(file, 0o640);
    expect(traced(env.home, () => privateAppendSync(file, 'x\n', { kind: 'sessions', env, fsync: true }))).toEqual([
      'open resolve sessions',
      'open open sessions/a.jsonl',
      'fstat open sessions/a.jsonl',
      'close release sessions',
      'read write sessions/a.jsonl',
      'write write sessions/a.jsonl',
      'fsync fsync sessions/a.jsonl',
      'close close sessions/a.jsonl',
    ]);
    expect(fs.statSync(file).mode & 0o7777).toBe(0o640);
    expect(fs.readFileSync(file, 'utf8')).toBe('old\nx\n');
  });

  it('the async forms make the same requests', async () => {
    const { env, file } = appendDir();
    const sync = traced(env.home, () => appendJsonLineSync(file, { n: 1 }, { kind: 'sessions', env, fsync: true }));
    fs.rmSync(file);
    const lines = await tracedAsync(env.home, () => appendJsonLine(file, { n: 2 }, { kind: 'sessions', env, fsync: true }));
    expect(lines).toEqual(sync);
    expect(fs.readFileSync(file, 'utf8')).toBe('{"n":2}\n');
  });

  it('a handle: appends are writes on one descriptor, sync is an fsync, close a close', () => {
    const { env, file } = appendDir();
    fs.writeFileSync(file, '', { mode: 0o600 });
    expect(
      traced(env.home, () => {
        const h = openAppendHandleSync(file, { kind: 'sessions', env });
        expect(h.appendSync('a\n')).toBe(2);
        expect(h.appendJsonSync({ b: 1 })).toBe(8);
        expect(h.appendManySync(['c\n', Buffer.from('d\n')])).toBe(4);
        expect(h.appendSync('')).toBe(0);
        h.syncSync();
        h.closeSync();
        h.closeSync();
        expect(h.closed).toBe(true);
      }),
    ).toEqual([
      'open resolve sessions',
      'open open sessions/a.jsonl',
      'fstat open sessions/a.jsonl',
      'close release sessions',
      'fstat write sessions/a.jsonl',
      'write write sessions/a.jsonl',
      'fstat write sessions/a.jsonl',
      'write write sessions/a.jsonl',
      'fstat write sessions/a.jsonl',
      'write write sessions/a.jsonl',
      'fsync fsync sessions/a.jsonl',
      'close close sessions/a.jsonl',
    ]);
    expect(fs.readFileSync(file, 'utf8')).toBe('a\n{"b":1}\nc\nd\n');
  });
});

describe('append: what is refused, exactly', () => {
  it('a FIFO (ENXIO without a reader) and the codes a device or socket gives are ENOTREGULAR, without blocking', () => {
    const { env, file } = appendDir();
    execFileSync('mkfifo', [file]);
    const expected = { code: 'ENOTREGULAR', step: 'open', path: file, message: `refusing to append to ${file}: not a regular file (a FIFO, socket or device)` };
    expect(shape(() => privateAppendSync(file, 'x\n', { kind: 'sessions', env }))).toEqual(expected);
    fs.rmSync(file);
    for (const code of ['ENODEV', 'EOPNOTSUPP', 'ENXIO']) {
      setFaultHook((r) => {
        if (r.op === 'open' && r.step === 'open' && r.path === file) throw errno(code, -6);
        return undefined;
      });
      const e = caught(() => privateAppendSync(file, 'x\n', { kind: 'sessions', env }));
      expect({ code: e.code, step: e.step, path: e.path, message: e.detail }, code).toEqual(expected);
      expect((e.cause as { code?: string }).code).toBe(code);
    }
    setFaultHook(undefined);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('a directory and a symbolic link at the target', () => {
    const { env, dir, file } = appendDir();
    fs.mkdirSync(file);
    expect(shape(() => privateAppendSync(file, 'x\n', { kind: 'sessions', env }))).toEqual({
      code: 'EISDIR',
      step: 'open',
      path: file,
      message: `refusing to append to ${file}: it is a directory`,
    });
    fs.rmdirSync(file);
    fs.writeFileSync(path.join(dir, 'real'), '', { mode: 0o600 });
    fs.symlinkSync('real', file);
    expect(shape(() => privateAppendSync(file, 'x\n', { kind: 'sessions', env }))).toEqual({
      code: 'ESYMLINK',
      step: 'open',
      path: file,
      message: `refusing to append to ${file}: it is a symbolic link`,
    });
    expect(fs.readFileSync(path.join(dir, 'real'), 'utf8')).toBe('');
  });

  it('any other open error is reported with its code and errno', () => {
    const { env, file } = appendDir();
    setFaultHook((r) => {
      if (r.op === 'open' && r.path === file) throw errno('EMFILE', -24);
      return undefined;
    });
    const e = caught(() => privateAppendSync(file, 'x\n', { kind: 'sessions', env }));
    expect({ code: e.code, step: e.step, path: e.path, errno: e.errno, message: e.detail }).toEqual({
      code: 'EMFILE',
      step: 'open',
      path: file,
      errno: -24,
      message: `open ${file} for append failed: EMFILE: injected`,
    });
  });

  it('a file another writer created first is appended to; one that vanished again is ENOENT', () => {
    const { env, file } = appendDir();
    let opens = 0;
    setFaultHook((r) => {
      if (r.op !== 'open' || r.path !== file) return undefined;
      opens++;
      if (opens === 1) throw errno('ENOENT', -2);
      if (opens === 2) {
        fs.writeFileSync(file, 'theirs\n', { mode: 0o600 });
        throw errno('EEXIST', -17);
      }
      return undefined;
    });
    const r = privateAppendSync(file, 'mine\n', { kind: 'sessions', env });
    expect({ created: r.created, mode: r.mode, bytes: r.bytes }).toEqual({ created: false, mode: 0o600, bytes: 5 });
    expect(fs.readFileSync(file, 'utf8')).toBe('theirs\nmine\n');
    fs.rmSync(file);
    opens = 0;
    setFaultHook((r2) => {
      if (r2.op !== 'open' || r2.path !== file) return undefined;
      opens++;
      throw errno(opens === 2 ? 'EEXIST' : 'ENOENT', opens === 2 ? -17 : -2);
    });
    expect(shape(() => privateAppendSync(file, 'mine\n', { kind: 'sessions', env }))).toEqual({
      code: 'ENOENT',
      step: 'open',
      path: file,
      message: `${file} vanished while opening it for append`,
    });
    expect(opens).toBe(3);
  });

  it('a create that fails with anything but EEXIST is reported as the open failing', () => {
    const { env, file } = appendDir();
    setFaultHook((r) => {
      if (r.op === 'open' && r.path === file) throw errno(r.args[1] === undefined ? 'EIO' : (Number(r.args[1]) & fs.constants.O_CREAT) !== 0 ? 'ENOSPC' : 'ENOENT', -28);
      return undefined;
    });
    const e = caught(() => privateAppendSync(file, 'x\n', { kind: 'sessions', env }));
    expect({ code: e.code, step: e.step, message: e.detail }).toEqual({ code: 'ENOSPC', step: 'open', message: `open ${file} for append failed: ENOSPC: injected` });
  });

  it('a write of nothing is ESHORT_WRITE and writes nothing', () => {
    const { env, file } = appendDir();
    fs.writeFileSync(file, 'old\n', { mode: 0o600 });
    setFaultHook((r) => (r.op === 'write' ? { result: 0 } : undefined));
    expect(shape(() => privateAppendSync(file, 'abc\n', { kind: 'sessions', env }))).toEqual({
      code: 'ESHORT_WRITE',
      step: 'short-write',
      path: file,
      message: `append to ${file} failed: the device accepted none of the 4 bytes; nothing was written`,
    });
    expect(fs.readFileSync(file, 'utf8')).toBe('old\n');
  });

  it('a torn record is terminated with a newline; when that fails too, the next record of the handle starts a new line', () => {
    const { env, file } = appendDir();
    fs.writeFileSync(file, '', { mode: 0o600 });
    const h = openAppendHandleSync(file, { kind: 'sessions', env });
    // The device takes 3 bytes of the record, then the newline.
    setFaultHook((r) => {
      if (r.op === 'write' && r.args[3] !== 1) {
        fs.writeSync(r.args[0] as number, (r.args[1] as Buffer).subarray(0, 3));
        return { result: 3 };
      }
      return undefined;
    });
    expect(shape(() => h.appendSync('abcdef\n'))).toEqual({
      code: 'ETORN_RECORD',
      step: 'short-write',
      path: file,
      message: `append to ${file} failed after 3 of 7 bytes (short write); the partial record was terminated with a newline, so every other line still parses`,
    });
    // Now the terminating newline fails as well.
    setFaultHook((r) => {
      if (r.op === 'write' && r.args[3] === 1) throw errno('ENOSPC', -28);
      if (r.op === 'write') {
        fs.writeSync(r.args[0] as number, (r.args[1] as Buffer).subarray(0, 2));
        return { result: 2 };
      }
      return undefined;
    });
    const e = caught(() => h.appendSync('ghij\n'));
    expect({ code: e.code, step: e.step, errno: e.errno, message: e.detail }).toEqual({
      code: 'ENOSPC',
      step: 'write',
      errno: -28,
      message: `append to ${file} failed after 2 of 5 bytes (ENOSPC); the file ends with the partial record; the next record (of any appender) starts on a new line`,
    });
    setFaultHook(undefined);
    h.appendSync('next\n');
    h.appendSync('last\n');
    h.closeSync();
    expect(fs.readFileSync(file, 'utf8')).toBe('abc\ngh\nnext\nlast\n');
  });
});

describe('append handle: batching, order and closing', () => {
  function handleFile(): { env: ReturnType<typeof tempEnv>; file: string } {
    const { env, file } = appendDir();
    fs.writeFileSync(file, '', { mode: 0o600 });
    return { env, file };
  }

  function writeSizes(): number[] {
    const sizes: number[] = [];
    setFaultHook((r) => {
      if (r.op === 'write') sizes.push(r.args[3] as number);
      return undefined;
    });
    return sizes;
  }

  it('appends issued together are one write, up to 1 MiB per write; a batch never splits a record', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env });
    const sizes = writeSizes();
    const half = `${'a'.repeat(512 * 1024 - 1)}\n`;
    await Promise.all([h.append(half), h.append(half), h.append(half), h.append(half)]);
    expect(sizes).toEqual([1024 * 1024, 1024 * 1024]);
    sizes.length = 0;
    const big = `${'b'.repeat(300 * 1024 - 1)}\n`;
    await Promise.all([h.append(big), h.append(big), h.append(big), h.append(big)]);
    expect(sizes).toEqual([900 * 1024, 300 * 1024]);
    sizes.length = 0;
    const huge = `${'c'.repeat(1024 * 1024)}\n`;
    await Promise.all([h.append(huge), h.append('d\n')]);
    expect(sizes).toEqual([1024 * 1024 + 1, 2]);
    await h.close();
    expect(fs.statSync(file).size).toBe(2 * 1024 * 1024 + 1200 * 1024 + 1024 * 1024 + 3);
  });

  it('strings and bytes in one batch keep their order and their bytes', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env });
    const sizes = writeSizes();
    const done = await Promise.all([
      h.append('é1\n'),
      h.append(Buffer.from('b2\n')),
      h.appendJson({ c: 3 }),
      h.appendMany(['d4\n', Buffer.from('e5\n')]),
      h.append(new Uint8Array([0x66, 0x36, 0x0a])),
    ]);
    expect(done).toEqual([4, 3, 8, 6, 3]);
    expect(sizes).toEqual([24]);
    await Promise.all([h.append(Buffer.from('g7\n')), h.append(Buffer.from('h8\n'))]);
    await h.close();
    expect(fs.readFileSync(file, 'utf8')).toBe('é1\nb2\n{"c":3}\nd4\ne5\nf6\ng7\nh8\n');
  });

  it('a closed handle refuses every call with ECLOSED; close is idempotent', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env });
    await h.close();
    await h.close();
    expect(h.closed).toBe(true);
    const expected = { code: 'ECLOSED', step: 'write', path: file, message: `append handle for ${file} is closed (or closing)` };
    expect(shape(() => h.appendSync('x\n'))).toEqual(expected);
    expect(
      shape(() => {
        h.syncSync();
      }),
    ).toEqual(expected);
    expect(await shapeAsync(h.append('x\n'))).toEqual(expected);
    expect(await shapeAsync(h.appendJson({}))).toEqual(expected);
    expect(await shapeAsync(h.appendMany(['x\n']))).toEqual(expected);
    expect(await shapeAsync(h.sync())).toEqual(expected);
    expect(fs.readFileSync(file, 'utf8')).toBe('');
  });

  it('bad records are refused before anything is queued', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env });
    expect((await shapeAsync(h.append(42 as never))).code).toBe('EINVALID_DATA');
    expect((await shapeAsync(h.appendJson(10n))).code).toBe('ESERIALIZE');
    expect((await shapeAsync(h.appendMany([{} as never]))).code).toBe('EINVALID_DATA');
    await h.append('ok\n');
    await h.close();
    expect(fs.readFileSync(file, 'utf8')).toBe('ok\n');
  });

  it('a close that fails is reported, by close() and by closeSync()', async () => {
    for (const form of ['async', 'sync'] as const) {
      const { env, file } = handleFile();
      const h = openAppendHandleSync(file, { kind: 'sessions', env });
      h.appendSync('a\n');
      setFaultHook((r) => {
        if (r.op === 'close' && r.step === 'close') throw errno('EIO', -5);
        return undefined;
      });
      const e = form === 'sync' ? caught(() => {
              h.closeSync();
            }) : await caughtAsync(h.close());
      setFaultHook(undefined);
      expect({ code: e.code, step: e.step, path: e.path }, form).toEqual({ code: 'EIO', step: 'close', path: file });
      expect(e.detail, form).toBe(`close ${file} failed: EIO: injected`);
      expect(h.closed).toBe(true);
    }
  });

  it('closeSync while a batch is in flight: the queue is written first, the descriptor closed only after the batch settles', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env });
    let release: (() => void) | undefined;
    const events: string[] = [];
    setFaultHook((r) => {
      if (r.op === 'close' && r.step === 'close') events.push('close');
      if (r.op === 'write' && release === undefined && events.length === 0) {
        const [fd, buf, off, len] = r.args as [number, Buffer, number, number];
        events.push('write-started');
        return {
          result: new Promise<number>((resolve) => {
            release = () => {
              events.push('write-done');
              resolve(fs.writeSync(fd, buf, off, len));
            };
          }),
        };
      }
      return undefined;
    });
    const first = h.append('first\n');
    // The write starts after the handle's checks, which go through the thread pool: on a loaded machine that takes
    // longer than a few turns of the event loop. Wait for it (bounded), then look.
    for (const until = Date.now() + 10_000; release === undefined && Date.now() < until; ) await new Promise((r) => setTimeout(r, 1));
    expect(events).toEqual(['write-started']);
    const second = h.append('second\n');
    h.closeSync();
    expect(h.closed).toBe(true);
    expect(events).toEqual(['write-started']);
    release?.();
    await expect(first).resolves.toBe(6);
    await expect(second).resolves.toBe(7);
    for (let i = 0; i < 10 && !events.includes('close'); i++) await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['write-started', 'write-done', 'close']);
    expect(fs.readFileSync(file, 'utf8')).toBe('second\nfirst\n');
  });

  it('close() waits for queued appends, then closes once', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env });
    const closes: string[] = [];
    setFaultHook((r) => {
      if (r.op === 'close') closes.push(r.step);
      return undefined;
    });
    const a = h.append('a\n');
    const b = h.appendJson({ b: 2 });
    await h.close();
    await expect(a).resolves.toBe(2);
    await expect(b).resolves.toBe(8);
    await h.sync().catch(() => undefined);
    h.closeSync();
    expect(closes).toEqual(['close']);
    expect(fs.readFileSync(file, 'utf8')).toBe('a\n{"b":2}\n');
  });

  it('sync() waits for the queue, then fsyncs', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env, fsync: false });
    const seen: string[] = [];
    setFaultHook((r) => {
      if (r.op === 'write' || r.op === 'fsync') seen.push(r.op);
      return undefined;
    });
    void h.append('a\n');
    await h.sync();
    expect(seen).toEqual(['write', 'fsync']);
    await h.close();
  });

  it('with fsync, every batch is fsynced before its promises settle', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env, fsync: true });
    const seen: string[] = [];
    setFaultHook((r) => {
      if (r.op === 'write' || r.op === 'fsync') seen.push(r.op);
      return undefined;
    });
    await Promise.all([h.append('a\n'), h.append('b\n')]);
    seen.push('settled');
    h.appendSync('c\n');
    await h.close();
    expect(seen).toEqual(['write', 'fsync', 'settled', 'write', 'fsync']);
  });

  it('a failed batch rejects every promise in it and the handle goes on', async () => {
    const { env, file } = handleFile();
    const h = await openAppendHandle(file, { kind: 'sessions', env });
    let fail = true;
    setFaultHook((r) => {
      if (r.op === 'write' && fail) {
        fail = false;
        throw errno('EIO', -5);
      }
      return undefined;
    });
    const results = await Promise.allSettled([h.append('a\n'), h.append('b\n')]);
    expect(results.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    await h.append('c\n');
    // A failed batch left in the sync queue: closeSync rejects its promises, the next ones still land.
    fail = true;
    const queued = [h.append('d\n'), h.append('e\n')];
    h.closeSync();
    expect((await Promise.allSettled(queued)).map((x) => x.status)).toEqual(['rejected', 'rejected']);
    expect(fs.readFileSync(file, 'utf8')).toBe('c\n');
  });
});

describeNeeds(['root'], 'ownership when root writes (root only)', () => {
  const OTHER = 4242;
  const OTHER_GID = 4343;

  function rootEnv(extra: Record<string, string>): { env: ReturnType<typeof loadEnvironment>; dir: string } {
    const { env: base, dir } = sessions();
    fs.mkdirSync(dir, { mode: 0o700 });
    const env = loadEnvironment({ home: base.home, env: { HERMES_MANAGED: 'false', ...extra }, umask: 0o022 });
    return { env, dir };
  }

  it('a new file takes HERMES_UID and HERMES_GID; either alone changes only its own id', () => {
    for (const [extra, want] of [
      [{ HERMES_UID: String(OTHER), HERMES_GID: String(OTHER_GID) }, [OTHER, OTHER_GID]],
      [{ HERMES_UID: String(OTHER) }, [OTHER, 0]],
      [{ HERMES_GID: String(OTHER_GID) }, [0, OTHER_GID]],
      [{}, [0, 0]],
    ] as const) {
      const { env, dir } = rootEnv(extra);
      const w = path.join(dir, 'w.json');
      const a = path.join(dir, 'a.jsonl');
      atomicWriteSync(w, 'x', { kind: 'sessions', env });
      privateAppendSync(a, 'x\n', { kind: 'sessions', env });
      for (const f of [w, a]) {
        const st = fs.statSync(f);
        expect([st.uid, st.gid], `${JSON.stringify(extra)} ${path.basename(f)}`).toEqual(want);
      }
    }
  });

  it('a kind without ownership, or a managed install, never chowns', () => {
    const { env, dir } = rootEnv({ HERMES_UID: String(OTHER), HERMES_GID: String(OTHER_GID) });
    const custom = {
      name: 'no-owner',
      description: 'a kind that keeps the writer as owner',
      dir: 'sessions',
      dirMode: 0o700,
      honoursHomeMode: false,
      requiredWhenManaged: false,
      ownership: false,
      file: { mode: 0o600, managedMode: 0o600, managedMaxMode: 0o600, retighten: false, ceiling: 0o600, managedCeiling: 0o600, secret: false },
    } as const;
    atomicWriteSync(path.join(dir, 'w.json'), 'x', { kind: custom, env });
    privateAppendSync(path.join(dir, 'a.jsonl'), 'x\n', { kind: custom, env });
    for (const f of ['w.json', 'a.jsonl']) expect(fs.statSync(path.join(dir, f)).uid, f).toBe(0);
  });

  it('a replacement keeps the owner of the file it replaces (uid, or only the gid, differing)', () => {
    const { env, dir } = rootEnv({});
    fs.chownSync(env.home, OTHER, OTHER_GID); // the home owner's files may be replaced by root
    const f = path.join(dir, 'w.json');
    for (const [uid, gid] of [
      [OTHER, OTHER_GID],
      [0, OTHER_GID],
      [OTHER, 0],
      [0, 0],
    ] as const) {
      fs.writeFileSync(f, 'old', { mode: 0o600 });
      fs.chownSync(f, uid, gid);
      const seen: string[] = [];
      setFaultHook((r) => {
        if (r.op === 'fchown') seen.push(`${String(r.args[1])}:${String(r.args[2])}`);
        return undefined;
      });
      atomicWriteSync(f, 'new', { kind: 'sessions', env });
      setFaultHook(undefined);
      const st = fs.statSync(f);
      expect([st.uid, st.gid]).toEqual([uid, gid]);
      expect(seen, `${String(uid)}:${String(gid)}`).toEqual(uid === 0 && gid === 0 ? [] : [`${String(uid)}:${String(gid)}`]);
    }
  });

  it('a chown that fails is a warning in the result and in the log, never hidden', () => {
    const { env, dir } = rootEnv({ HERMES_UID: String(OTHER) });
    const lines: string[] = [];
    const logger: FsPolicyLogger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (m, f) => lines.push(`${m} ${JSON.stringify(f ?? {})}`),
      error: () => undefined,
    };
    setLogger(logger);
    setFaultHook((r) => {
      if (r.op === 'fchown') throw errno('EPERM', -1);
      return undefined;
    });
    const w = atomicWriteSync(path.join(dir, 'w.json'), 'x', { kind: 'sessions', env });
    const a = privateAppendSync(path.join(dir, 'a.jsonl'), 'x\n', { kind: 'sessions', env });
    setFaultHook(undefined);
    expect(w.warnings).toHaveLength(1);
    expect(w.warnings[0]).toMatch(new RegExp(`^fchown ${UNNAMED ? `an unnamed temp file in ${dir}` : `${dir}/\\.w\\.json\\.[^ ]+\\.tmp`} failed during fchown: EPERM$`));
    expect(a.warnings).toEqual([`fchown ${path.join(dir, 'a.jsonl')} failed during fchown: EPERM`]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(UNNAMED ? /^file owner not applied \{"path":"an unnamed temp file in [^"]+","uid":0,"wantUid":4242,"wantGid":-1\}$/ : /^file owner not applied \{"path":"[^"]+\.tmp","uid":0,"wantUid":4242,"wantGid":-1\}$/);
    expect(fs.statSync(path.join(dir, 'w.json')).uid).toBe(0);
  });

  it('a chown that succeeds logs nothing', () => {
    const { env, dir } = rootEnv({ HERMES_UID: String(OTHER) });
    const lines: string[] = [];
    setLogger({ debug: () => undefined, info: () => undefined, warn: (m) => lines.push(m), error: (m) => lines.push(m) });
    expect(atomicWriteSync(path.join(dir, 'w.json'), 'x', { kind: 'sessions', env }).warnings).toEqual([]);
    expect(fs.statSync(path.join(dir, 'w.json')).uid).toBe(OTHER);
    expect(lines).toEqual([]);
  });

  it('as root, appending to an existing file owned by the home owner is allowed; by a stranger, refused', () => {
    const { env, dir } = rootEnv({});
    const a = path.join(dir, 'a.jsonl');
    fs.writeFileSync(a, '', { mode: 0o600 });
    fs.chownSync(env.home, OTHER, OTHER_GID);
    fs.chownSync(a, OTHER, OTHER_GID);
    expect(privateAppendSync(a, 'x\n', { kind: 'sessions', env }).created).toBe(false);
    fs.chownSync(a, OTHER + 1, OTHER_GID);
    expect(caught(() => privateAppendSync(a, 'y\n', { kind: 'sessions', env })).code).toBe('EFOREIGN_OWNER');
    expect(fs.readFileSync(a, 'utf8')).toBe('x\n');
  });
});

describe('bad data is refused before any I/O, naming what was passed', () => {
  it('names the type', () => {
    const { env, file } = sessions();
    for (const [value, what] of [
      [42, 'number'],
      [null, 'null'],
      [undefined, 'undefined'],
      [{ a: 1 }, 'Object'],
      [Object.create(null) as object, 'object'],
      [new ArrayBuffer(2), 'ArrayBuffer'],
      [[1], 'Array'],
    ] as const) {
      expect(shape(() => atomicWriteSync(file, value as never, { kind: 'sessions', env })), what).toEqual({
        code: 'EINVALID_DATA',
        step: 'serialize',
        path: file,
        message: `cannot write ${what} to ${file}: pass a string or a Uint8Array (use atomicWriteJson for values)`,
      });
    }
    expect(fs.existsSync(path.dirname(file))).toBe(false);
  });
});

describe('the paths a second look found unpinned', () => {
  it('an absolute link out of the home: ESYMLINK_ESCAPE naming the link and where it leads', () => {
    const { env, dir, file } = sessions();
    fs.mkdirSync(dir, { mode: 0o700 });
    const outside = path.join(path.dirname(env.home), 'outside.json');
    fs.symlinkSync(outside, file);
    expect(shape(() => atomicWriteSync(file, 'x', { kind: 'sessions', env }))).toEqual({
      code: 'ESYMLINK_ESCAPE',
      step: 'resolve',
      path: file,
      message: `${file} -> ${outside} leads outside ${env.home}; refusing to write through it`,
    });
    expect(fs.existsSync(outside)).toBe(false);
  });

  it('a link that cannot be read is reported at the resolve step', () => {
    const { env, dir, file } = sessions();
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.symlinkSync('x.json', file);
    setFaultHook((r) => {
      if (r.op === 'readlink' && r.path === file) throw errno('EIO', -5);
      return undefined;
    });
    const e = caught(() => atomicWriteSync(file, 'x', { kind: 'sessions', env }));
    expect({ code: e.code, step: e.step, path: e.path, detail: e.detail }).toEqual({ code: 'EIO', step: 'resolve', path: file, detail: `readlink ${file} failed: EIO: injected` });
  });

  it('a link through a regular file is ENOTDIR, not a dangling link', () => {
    const { env, dir, file } = sessions();
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.writeFileSync(path.join(dir, 'plain'), 'p', { mode: 0o600 });
    fs.symlinkSync('plain/x.json', file);
    const e = caught(() => atomicWriteSync(file, 'x', { kind: 'sessions', env }));
    expect(e.code).toBe('ENOTDIR');
    expect(ls(dir)).toEqual(['plain', 's.json']);
  });

  it('createParents: false creates no directory (atomic write and append)', () => {
    const { env, dir, file } = sessions();
    expect(caught(() => atomicWriteSync(file, 'x', { kind: 'sessions', env, createParents: false })).code).toBe('ENOENT');
    expect(caught(() => privateAppendSync(`${file}l`, 'x\n', { kind: 'sessions', env, createParents: false })).code).toBe('ENOENT');
    expect(fs.existsSync(dir)).toBe(false);
    expect(atomicWriteSync(file, 'x', { kind: 'sessions', env }).createdDirs).toEqual([dir]);
  });

  describe('a directory moved out of a shared home (2770) while a write is under way', () => {
    function shared(): { env: ReturnType<typeof tempEnv>; dir: string; file: string; away: string } {
      const env = tempEnv({ homeMode: '2770' });
      fs.chmodSync(env.home, 0o2770);
      const dir = path.join(env.home, 'sessions');
      return { env, dir, file: path.join(dir, 's.json'), away: path.join(path.dirname(env.home), 'away') };
    }

    /** At the first request `when` matches, a group member renames `dir` to `away` (the request then runs). */
    function moveOutWhen(dir: string, away: string, when: (r: Req) => boolean): void {
      let moved = false;
      setFaultHook((r) => {
        if (!moved && when(r)) {
          moved = true;
          fs.renameSync(dir, away);
        }
        return undefined;
      });
    }

    it('before the commit: ERACE, nothing left in the moved directory', () => {
      const { env, dir, file, away } = shared();
      atomicWriteSync(path.join(dir, 'other'), 'o', { kind: 'sessions', env });
      moveOutWhen(dir, away, (r) => r.op === 'close' && r.step === 'close');
      expect(shape(() => atomicWriteSync(file, 'x', { kind: 'sessions', env }))).toEqual({
        code: 'ERACE',
        step: 'resolve',
        path: dir,
        message: `${dir} was moved out of the home (to ${away}) by another process during the write; nothing was left there`,
      });
      expect(ls(away)).toEqual(['other']);
    });

    it('after the commit: a new file is removed again, a replaced one gets its previous version back', () => {
      for (const existed of [false, true]) {
        const { env, dir, file, away } = shared();
        atomicWriteSync(existed ? file : path.join(dir, 'other'), 'old', { kind: 'sessions', env });
        moveOutWhen(dir, away, (r) => r.op === 'fsync' && r.step === 'fsync-dir');
        const e = caught(() => atomicWriteSync(file, 'new', { kind: 'sessions', env }));
        setFaultHook(undefined);
        expect([e.code, e.step, e.detail]).toEqual(['ERACE', 'resolve', `${dir} was moved out of the home (to ${away}) by another process during the write; nothing was left there`]);
        if (existed) {
          expect(ls(away)).toEqual(['s.json']);
          expect(fs.readFileSync(path.join(away, 's.json'), 'utf8')).toBe('old');
        } else {
          expect(ls(away)).toEqual(['other']);
        }
      }
    });

    it('overwrite: false after the commit: the linked file is removed again', () => {
      const { env, dir, file, away } = shared();
      atomicWriteSync(path.join(dir, 'other'), 'old', { kind: 'sessions', env });
      moveOutWhen(dir, away, (r) => r.op === 'fsync' && r.step === 'fsync-dir');
      expect(caught(() => atomicWriteSync(file, 'new', { kind: 'sessions', env, overwrite: false })).code).toBe('ERACE');
      setFaultHook(undefined);
      expect(ls(away)).toEqual(['other']);
    });

    it('an append whose directory moves while it opens: ERACE, the file it created removed again', () => {
      const { env, dir, away } = shared();
      atomicWriteSync(path.join(dir, 'other'), 'o', { kind: 'sessions', env });
      const file = path.join(dir, 'a.jsonl');
      moveOutWhen(dir, away, (r) => r.op === 'fchmod' && r.path === file);
      expect(shape(() => privateAppendSync(file, 'x\n', { kind: 'sessions', env }))).toEqual({
        code: 'ERACE',
        step: 'resolve',
        path: dir,
        message: `${dir} was moved out of the home (to ${away}) by another process during the open; nothing was left there`,
      });
      expect(ls(away)).toEqual(['other']);
    });

    it('an append whose file was moved out after the write: ERACE at the write step', () => {
      const { env, dir } = shared();
      const file = path.join(dir, 'a.jsonl');
      privateAppendSync(file, 'a\n', { kind: 'sessions', env });
      const h = openAppendHandleSync(file, { kind: 'sessions', env });
      const elsewhere = path.join(path.dirname(env.home), 'moved.jsonl');
      fs.renameSync(file, elsewhere);
      expect(shape(() => h.appendSync('b\n'))).toEqual({
        code: 'ERACE',
        step: 'write',
        path: file,
        message: `${file} was moved out of the home (it is now ${elsewhere}) by another process; the record was appended there, not in the home`,
      });
      setFaultHook((r) => {
        if (r.op === 'readlink') throw errno('EIO', -5);
        return undefined;
      });
      expect(caught(() => h.appendSync('c\n')).step).toBe('write');
      setFaultHook(undefined);
      h.closeSync();
    });
  });

  it('a rollback that finds the target gone (or unreadable) touches nothing and says so', () => {
    for (const how of ['removed', 'unreadable'] as const) {
      for (const existed of [true, false]) {
        const { env, dir, file } = sessions();
        atomicWriteSync(existed ? file : path.join(dir, 'other'), 'old', { kind: 'sessions', env });
        let failed = false;
        setFaultHook((r) => {
          if (r.op === 'fsync' && r.step === 'fsync-dir') {
            failed = true;
            if (how === 'removed') fs.rmSync(file);
            throw errno('EIO', -5);
          }
          if (how === 'unreadable' && failed && r.op === 'lstat' && r.path === file) throw errno('EACCES', -13);
          return undefined;
        });
        const e = caught(() => atomicWriteSync(file, 'new', { kind: 'sessions', env }));
        setFaultHook(undefined);
        expect([e.code, e.committed, e.detail], `${how} ${String(existed)}`).toEqual([
          'EIO',
          false,
          `fsync ${dir} failed: EIO: injected; ${file} was replaced by another writer meanwhile; it is left as that writer made it`,
        ]);
        expect(ls(dir).filter((n) => n.endsWith('.bak') || n.endsWith('.tmp'))).toEqual([]);
      }
    }
  });

  it('values JSON cannot hold are ESERIALIZE with the reason, before any I/O', () => {
    const { env, file } = sessions();
    const hostile = {
      toJSON(): never {
        throw new Error('no JSON for me');
      },
    };
    expect(shape(() => atomicWriteJsonSync(file, hostile, { kind: 'sessions', env }))).toEqual({
      code: 'ESERIALIZE',
      step: 'serialize',
      path: file,
      message: `cannot serialise value for ${file}: no JSON for me`,
    });
    for (const [value, what] of [
      [undefined, 'undefined'],
      [() => 1, 'function'],
      [Symbol('s'), 'symbol'],
    ] as const) {
      expect(shape(() => atomicWriteJsonSync(file, value, { kind: 'sessions', env })).message).toBe(`cannot serialise value for ${file}: JSON has no representation for ${what}`);
    }
    expect(shape(() => atomicWriteJsonSync(file, 10n, { kind: 'sessions', env })).message).toBe(`cannot serialise value for ${file}: Do not know how to serialize a BigInt`);
    expect(fs.existsSync(path.dirname(file))).toBe(false);
    expect(atomicWriteJsonSync(file, [1], { kind: 'sessions', env, indent: 0 }).bytes).toBe(4);
    expect(fs.readFileSync(file, 'utf8')).toBe('[1]\n');
  });

  it('fsyncDirectory: open, fsync, close of the directory; a missing one is an error at the fsync-dir step', async () => {
    const { env, dir } = sessions();
    fs.mkdirSync(dir, { mode: 0o700 });
    expect(traced(env.home, () => { fsyncDirectorySync(dir); })).toEqual(['open fsync-dir sessions', 'fsync fsync-dir sessions', 'close close sessions']);
    expect(await tracedAsync(env.home, () => fsyncDirectory(dir))).toEqual(['open fsync-dir sessions', 'fsync fsync-dir sessions', 'close close sessions']);
    const missing = path.join(dir, 'gone');
    const e = caught(() => {
      fsyncDirectorySync(missing);
    });
    expect([e.code, e.step, e.path]).toEqual(['ENOENT', 'fsync-dir', missing]);
    setFaultHook((r) => {
      if (r.op === 'fsync') throw errno('EIO', -5);
      return undefined;
    });
    const f = caught(() => {
      fsyncDirectorySync(dir);
    });
    expect([f.code, f.step, f.detail]).toEqual(['EIO', 'fsync-dir', `fsync ${dir} failed: EIO: injected`]);
  });

  it('an append whose fstat fails is an error at the open step, and the descriptor is closed', () => {
    const { env, file } = appendDir();
    const closes: string[] = [];
    setFaultHook((r) => {
      if (r.op === 'fstat' && r.path === file) throw errno('EIO', -5);
      if (r.op === 'close' && r.path === file) closes.push(r.step);
      return undefined;
    });
    const e = caught(() => privateAppendSync(file, 'x\n', { kind: 'sessions', env }));
    expect([e.code, e.step, e.detail]).toEqual(['EIO', 'open', `fstat ${file} failed: EIO: injected`]);
    expect(closes).toEqual(['close']);
  });

  it("a torn record's terminating newline is written at the write step; its failure is the cause", () => {
    const { env, file } = appendDir();
    const h = openAppendHandleSync(file, { kind: 'sessions', env });
    const steps: string[] = [];
    setFaultHook((r) => {
      if (r.op !== 'write') return undefined;
      steps.push(`${r.step} ${String(r.args[3])}`);
      if (r.args[3] === 1) throw errno('ENOSPC', -28);
      fs.writeSync(r.args[0] as number, (r.args[1] as Buffer).subarray(0, 1));
      return { result: 1 };
    });
    const e = caught(() => h.appendSync('abc\n'));
    setFaultHook(undefined);
    h.closeSync();
    expect(steps).toEqual(['write 4', 'write 1']);
    const cause = e.cause as FsPolicyError;
    expect([cause.code, cause.step, cause.detail]).toEqual(['ENOSPC', 'write', `append to ${file} failed: ENOSPC: injected`]);
  });

  it('closeSync in the same turn as async appends: they are written first, and the descriptor is closed exactly once', async () => {
    const { env, file } = appendDir();
    const h = await openAppendHandle(file, { kind: 'sessions', env });
    const closes: string[] = [];
    setFaultHook((r) => {
      if (r.op === 'close' && r.path === file) closes.push(r.step);
      return undefined;
    });
    const a = h.append('a\n');
    h.closeSync();
    await expect(a).resolves.toBe(2);
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(closes).toEqual(['close']);
    expect(fs.readFileSync(file, 'utf8')).toBe('a\n');
  });
});
