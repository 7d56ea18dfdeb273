// The unnamed temp file of an atomic write: with the native layer in force, the content is written into a file
// with no name (O_TMPFILE) that is named only once complete, with its mode and owner, and fsynced; a fault or a
// crash before that leaves nothing behind. Without the native layer, or where the filesystem has no unnamed
// files, the named temp of before — with the same checks.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeNeeds, spawnNode } from '@hermes/test-utils';
import { setFaultHook, type Req } from '../src/internal/io.js';
import { atomicWrite, atomicWriteSync, atomicWriteAtSync, holdDirectorySync, loadEnvironment, setLogger, silentLogger } from '../src/index.js';
import { resetNativeForTests } from '../src/native.js';
import { caught, fixture, ls, tempEnv } from './helpers.js';
import { describeNative } from './native-support.js';

const saved = process.env.HERMES_FS_ANCHOR;
function useMode(mode: string | undefined): void {
  if (mode === undefined) delete process.env.HERMES_FS_ANCHOR;
  else process.env.HERMES_FS_ANCHOR = mode;
  resetNativeForTests();
}
beforeEach(() => {
  useMode('native');
});
afterEach(() => {
  setFaultHook(undefined);
  useMode(saved);
  setLogger(silentLogger);
});
setLogger(silentLogger);

function errno(code: string, n: number): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected`), { code, errno: n });
}

function sessions(): { env: ReturnType<typeof tempEnv>; dir: string; file: string } {
  const env = tempEnv();
  const dir = path.join(env.home, 'sessions');
  fs.mkdirSync(dir, { mode: 0o700 });
  return { env, dir, file: path.join(dir, 's.json') };
}

describeNative('atomic write with an unnamed temp file (O_TMPFILE)', (b) => {
  const TMPFILE = b.constants.O_TMPFILE;
  const isUnnamedOpen = (r: Req): boolean => r.op === 'open' && ((r.args[1] as number) & TMPFILE) === TMPFILE;
  const isFdLink = (r: Req): boolean => r.op === 'link' && typeof r.args[0] === 'number';
  const short = (p: unknown): string => path.basename(String(p)).replace(/^\..+\.\d+-\d+\.[0-9a-f]{12}\.(tmp|bak)$/s, '<$1>');

  /** The write's steps on the file and its names, in order (temp names as <tmp> and <bak>). */
  function trace<T>(fn: () => T, extra?: (r: Req) => void): { result: T; steps: string[] } {
    const steps = hookSteps(extra);
    try {
      return { result: fn(), steps };
    } finally {
      setFaultHook(undefined);
    }
  }

  /** {@link trace} of an asynchronous write: the hook stays until it settled. */
  async function traceAsync<T>(fn: () => Promise<T>): Promise<{ result: T; steps: string[] }> {
    const steps = hookSteps();
    try {
      return { result: await fn(), steps };
    } finally {
      setFaultHook(undefined);
    }
  }

  function hookSteps(extra?: (r: Req) => void): string[] {
    const steps: string[] = [];
    setFaultHook((r) => {
      const a = r.args;
      if (isUnnamedOpen(r)) steps.push('open O_TMPFILE');
      else if (r.op === 'open' && ((a[1] as number) & fs.constants.O_CREAT) !== 0) steps.push(`open ${short(a[0])}`);
      else if (r.op === 'link') steps.push(`link ${typeof a[0] === 'number' ? 'fd' : short(a[0])} -> ${short(a[1])}`);
      else if (r.op === 'rename') steps.push(`rename ${short(a[0])} -> ${short(a[1])}`);
      else if (r.op === 'unlink') steps.push(`unlink ${short(a[0])}`);
      else if (['write', 'fchmod', 'fchown'].includes(r.op) || (r.op === 'close' && r.step === 'close')) steps.push(r.op);
      else if (r.op === 'fsync') steps.push(r.step);
      extra?.(r);
      return undefined;
    });
    return steps;
  }

  it('create: the file has no name until it is complete, with its final mode, and fsynced; then a temp name, renamed', () => {
    const { env, dir, file } = sessions();
    let atLink: { size: number; mode: string; entries: string[] } | undefined;
    const { result, steps } = trace(
      () => atomicWriteSync(file, 'twelve bytes', { kind: 'sessions', env, mode: 0o640 }),
      (r) => {
        if (isFdLink(r)) atLink = { size: fs.fstatSync(r.args[0] as number).size, mode: (fs.fstatSync(r.args[0] as number).mode & 0o7777).toString(8), entries: ls(dir) };
      },
    );
    expect(result.temp).toBe('tmpfile');
    expect(steps).toEqual(['open O_TMPFILE', 'write', 'fchmod', 'fsync', 'link fd -> <tmp>', 'close', 'rename <tmp> -> s.json', 'fsync-dir']);
    expect(atLink).toEqual({ size: 12, mode: '640', entries: [] });
    expect(ls(dir)).toEqual(['s.json']);
    expect(fs.readFileSync(file, 'utf8')).toBe('twelve bytes');
  });

  it('replace (sync and async): the same, with the rollback link of the previous version', async () => {
    const { env, file } = sessions();
    fs.writeFileSync(file, 'one', { mode: 0o600 });
    const want = ['open O_TMPFILE', 'write', 'fchmod', 'fsync', 'link fd -> <tmp>', 'close', 'link s.json -> <bak>', 'rename <tmp> -> s.json', 'fsync-dir', 'unlink <bak>'];
    expect(trace(() => atomicWriteSync(file, 'two', { kind: 'sessions', env })).steps).toEqual(want);
    const later = await traceAsync(() => atomicWrite(file, 'three', { kind: 'sessions', env }));
    expect(later.result.temp).toBe('tmpfile');
    expect(later.steps).toEqual(want);
    expect(ls(path.dirname(file))).toEqual(['s.json']);
    expect(fs.readFileSync(file, 'utf8')).toBe('three');
  });

  it('overwrite: false: the complete file is linked straight to the target; no temp name ever exists', async () => {
    const { env, dir, file } = sessions();
    const sync = trace(() => atomicWriteSync(file, 'new', { kind: 'sessions', env, overwrite: false }));
    expect(sync.result.temp).toBe('tmpfile');
    expect(sync.steps).toEqual(['open O_TMPFILE', 'write', 'fchmod', 'fsync', 'link fd -> s.json', 'close', 'fsync-dir']);
    const other = path.join(dir, 'o.json');
    const async = await traceAsync(() => atomicWrite(other, 'async', { kind: 'sessions', env, overwrite: false }));
    expect(async.result.temp).toBe('tmpfile');
    expect(async.steps).toEqual(['open O_TMPFILE', 'write', 'fchmod', 'fsync', 'link fd -> o.json', 'close', 'fsync-dir']);
    expect(ls(dir)).toEqual(['o.json', 's.json']);
  });

  it('overwrite: false never clobbers: EEXIST before any file is made, or at the link when the name appeared meanwhile', () => {
    const { env, dir, file } = sessions();
    fs.writeFileSync(file, 'existing');
    const before = trace(() => caught(() => atomicWriteSync(file, 'new', { kind: 'sessions', env, overwrite: false })));
    expect({ code: before.result.code, step: before.result.step }).toEqual({ code: 'EEXIST', step: 'resolve' });
    expect(before.steps).toEqual([]);
    const late = path.join(dir, 'late.json');
    const raced = trace(
      () => caught(() => atomicWriteSync(late, 'mine', { kind: 'sessions', env, overwrite: false })),
      (r) => {
        if (isFdLink(r)) fs.writeFileSync(late, 'theirs');
      },
    );
    expect({ code: raced.result.code, step: raced.result.step, path: raced.result.path, leftovers: raced.result.leftovers }).toEqual({ code: 'EEXIST', step: 'link', path: late, leftovers: [] });
    expect(raced.result.detail.startsWith(`link ${late} failed: EEXIST`)).toBe(true);
    expect(fs.readFileSync(late, 'utf8')).toBe('theirs');
    expect(fs.readFileSync(file, 'utf8')).toBe('existing');
    expect(ls(dir)).toEqual(['late.json', 's.json']);
  });

  it('overwrite: false, a failure after the link (its close): the target goes again, unless another file took the name', () => {
    const { env, dir, file } = sessions();
    const closeFails = (before?: () => void) => (r: Req): undefined => {
      if (r.op === 'close' && r.step === 'close') {
        before?.();
        throw errno('EIO', -5);
      }
      return undefined;
    };
    setFaultHook(closeFails());
    const e = caught(() => atomicWriteSync(file, 'mine', { kind: 'sessions', env, overwrite: false }));
    expect({ code: e.code, step: e.step, leftovers: e.leftovers }).toEqual({ code: 'EIO', step: 'close', leftovers: [] });
    expect(ls(dir)).toEqual([]);
    setFaultHook(
      closeFails(() => {
        fs.writeFileSync(path.join(dir, 'theirs'), 'theirs');
        fs.renameSync(path.join(dir, 'theirs'), file);
      }),
    );
    expect(caught(() => atomicWriteSync(file, 'mine', { kind: 'sessions', env, overwrite: false })).step).toBe('close');
    expect(fs.readFileSync(file, 'utf8')).toBe('theirs');
    expect(ls(dir)).toEqual(['s.json']);
  });

  it('a fault before the link whose cleanup fails too leaves no entry; the named temp of procfd mode is left behind', () => {
    const failing = (r: Req): { result: unknown } | undefined => {
      if (r.op === 'fsync' && r.step === 'fsync') throw errno('EIO', -5);
      if (r.op === 'unlink') throw errno('EPERM', -1);
      return undefined;
    };
    const outcome = (mode: string): { leftovers: readonly string[]; entries: string[] } => {
      useMode(mode);
      const { env, dir, file } = sessions();
      fs.writeFileSync(file, 'old');
      setFaultHook(failing);
      const e = caught(() => atomicWriteSync(file, 'new', { kind: 'sessions', env }));
      setFaultHook(undefined);
      expect({ code: e.code, step: e.step, content: fs.readFileSync(file, 'utf8') }).toEqual({ code: 'EIO', step: 'fsync', content: 'old' });
      return { leftovers: e.leftovers.map(short), entries: ls(dir).map(short) };
    };
    expect(outcome('native')).toEqual({ leftovers: [], entries: ['s.json'] });
    expect(outcome('procfd')).toEqual({ leftovers: ['<tmp>'], entries: ['<tmp>', 's.json'] });
  });

  it('SIGKILL at the file fsync: nothing is left with the unnamed temp; the named temp (procfd) is left as an orphan', async () => {
    const killedAt = async (mode: string): Promise<string[]> => {
      const env = tempEnv();
      const dir = path.join(env.home, 'pending_messages');
      fs.mkdirSync(dir, { mode: 0o700 });
      const target = path.join(dir, 'pending-x.json');
      fs.writeFileSync(target, 'old', { mode: 0o600 });
      const child = spawnNode(fixture('pause-at.mjs'), [target, 'fsync', 'new'], { env: { HERMES_FS_ANCHOR: mode } });
      await new Promise<void>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          // Paused in the step of the file fsync (at its fstat, or at the fsync itself): before any link.
          if (out.includes('PAUSED fsync')) resolve();
          else if (out.includes('DONE')) reject(new Error('the child never paused at fsync'));
        });
        child.on('exit', (code) => {
          reject(new Error(`child exited ${String(code)} before pausing`));
        });
      });
      const exited = new Promise((done) => child.on('exit', done));
      child.kill('SIGKILL');
      await exited;
      expect(fs.readFileSync(target, 'utf8')).toBe('old');
      return ls(dir).map((n) => n.replace(/^\.pending-x\.json\.\d+-\d+\.[0-9a-f]{12}\.tmp$/, '<tmp>'));
    };
    expect(await killedAt('native')).toEqual(['pending-x.json']);
    expect(await killedAt('procfd')).toEqual(['<tmp>', 'pending-x.json']);
  });

  it('HERMES_FS_ANCHOR=procfd keeps the named temp, created first', () => {
    useMode('procfd');
    const { env, file } = sessions();
    const { result, steps } = trace(() => atomicWriteSync(file, 'x', { kind: 'sessions', env }));
    expect(result.temp).toBe('named');
    expect(steps).toEqual(['open <tmp>', 'write', 'fchmod', 'fsync', 'close', 'rename <tmp> -> s.json', 'fsync-dir']);
  });

  for (const code of ['EOPNOTSUPP', 'EISDIR', 'EINVAL']) {
    it(`a filesystem without unnamed files (${code} from O_TMPFILE): the named temp, silently, with every step`, () => {
      const { env, dir, file } = sessions();
      const { result, steps } = trace(
        () => atomicWriteSync(file, 'x', { kind: 'sessions', env }),
        (r) => {
          if (isUnnamedOpen(r)) throw errno(code, -95);
        },
      );
      expect({ temp: result.temp, warnings: result.warnings }).toEqual({ temp: 'named', warnings: [] });
      expect(steps).toEqual(['open O_TMPFILE', 'open <tmp>', 'write', 'fchmod', 'fsync', 'close', 'rename <tmp> -> s.json', 'fsync-dir']);
      expect(ls(dir)).toEqual(['s.json']);
    });
  }

  it('an unnamed file that cannot be named (ENOENT: neither AT_EMPTY_PATH nor /proc): dropped, and the named temp instead', () => {
    const { env, dir, file } = sessions();
    const { result, steps } = trace(
      () => atomicWriteSync(file, 'x', { kind: 'sessions', env, overwrite: false }),
      (r) => {
        if (isFdLink(r)) throw errno('ENOENT', -2);
      },
    );
    expect({ temp: result.temp, warnings: result.warnings }).toEqual({ temp: 'named', warnings: [] });
    // The unnamed file is closed (and so gone) before the named attempt begins.
    expect(steps).toEqual(['open O_TMPFILE', 'write', 'fchmod', 'fsync', 'link fd -> s.json', 'close', 'open <tmp>', 'write', 'fchmod', 'fsync', 'close', 'link <tmp> -> s.json', 'unlink <tmp>', 'fsync-dir']);
    expect(ls(dir)).toEqual(['s.json']);
  });

  it('any other failure of the unnamed open or of its link (but EEXIST) hands the write to the named temp', () => {
    const { env, dir, file } = sessions();
    for (const [what, fail] of [
      ['open', isUnnamedOpen],
      ['link', isFdLink],
    ] as const) {
      const { result, steps } = trace(
        () => atomicWriteSync(file, what, { kind: 'sessions', env }),
        (r) => {
          if (fail(r)) throw errno('EDQUOT', -122);
        },
      );
      expect({ temp: result.temp, warnings: result.warnings }, what).toEqual({ temp: 'named', warnings: [] });
      expect(steps.slice(steps.indexOf('open <tmp>')), what).toEqual(['open <tmp>', 'write', 'fchmod', 'fsync', 'close', ...(what === 'open' ? [] : ['link s.json -> <bak>']), 'rename <tmp> -> s.json', 'fsync-dir', ...(what === 'open' ? [] : ['unlink <bak>'])]);
      expect(fs.readFileSync(file, 'utf8')).toBe(what);
    }
    expect(ls(dir)).toEqual(['s.json']);
  });

  it('a held directory removed meanwhile is ENOENT, as with the named temp (O_TMPFILE itself answers EPERM there)', () => {
    const { env, dir } = sessions();
    const held = holdDirectorySync(dir, { env });
    try {
      fs.rmdirSync(dir);
      const { result, steps } = trace(() => caught(() => atomicWriteAtSync(held, 'x.json', 'x', { kind: 'sessions', env })));
      expect({ code: result.code, step: result.step }).toEqual({ code: 'ENOENT', step: 'open' });
      expect(result.detail).toMatch(/^create the temp file .+\/\.x\.json\.\d+-\d+\.[0-9a-f]{12}\.tmp failed: ENOENT: no such file or directory$/);
      expect(steps).toEqual(['open O_TMPFILE', 'open <tmp>']);
    } finally {
      held.close();
    }
  });

  it('a short write names the unnamed temp by its directory; nothing is left', () => {
    const { env, dir, file } = sessions();
    setFaultHook((r) => (r.op === 'write' ? { result: 0 } : undefined));
    const e = caught(() => atomicWriteSync(file, 'twelve bytes', { kind: 'sessions', env }));
    expect({ code: e.code, step: e.step, message: e.detail }).toEqual({ code: 'ESHORT_WRITE', step: 'short-write', message: `short write to an unnamed temp file in ${dir} (for ${file}): 0 of 12 bytes accepted` });
    expect(ls(dir)).toEqual([]);
  });

  it('the checks are the same: a link leading out of the home is ESYMLINK_ESCAPE before any file is made', () => {
    const { env, dir } = sessions();
    const outside = path.join(path.dirname(env.home), 'outside.json');
    fs.symlinkSync(outside, path.join(dir, 'escape.json'));
    const { result, steps } = trace(() => caught(() => atomicWriteSync(path.join(dir, 'escape.json'), 'x', { kind: 'sessions', env })));
    expect(result.code).toBe('ESYMLINK_ESCAPE');
    expect(steps).toEqual([]);
    expect(fs.existsSync(outside)).toBe(false);
  });

  it('atomicWriteAt writes through the held directory with an unnamed temp', () => {
    const { env, dir } = sessions();
    const held = holdDirectorySync(dir, { env });
    try {
      const { result, steps } = trace(() => atomicWriteAtSync(held, 'h.json', 'held', { kind: 'sessions', env, overwrite: false }));
      expect(result.temp).toBe('tmpfile');
      expect(steps).toEqual(['open O_TMPFILE', 'write', 'fchmod', 'fsync', 'link fd -> h.json', 'close', 'fsync-dir']);
    } finally {
      held.close();
    }
    expect(fs.readFileSync(path.join(dir, 'h.json'), 'utf8')).toBe('held');
  });

  describeNeeds(['root'], 'as root (fchown of the unnamed file)', () => {
    const OTHER = 4242;
    const OTHER_GID = 4343;
    it('a new file takes HERMES_UID/HERMES_GID before it is named; a replaced file keeps its owner', () => {
      const { env: base, dir, file } = sessions();
      const env = loadEnvironment({ home: base.home, env: { HERMES_MANAGED: 'false', HERMES_UID: String(OTHER), HERMES_GID: String(OTHER_GID) }, umask: 0o022 });
      let owner: string | undefined;
      const created = trace(
        () => atomicWriteSync(file, 'x', { kind: 'sessions', env, overwrite: false }),
        (r) => {
          if (isFdLink(r)) owner = `${String(fs.fstatSync(r.args[0] as number).uid)}:${String(fs.fstatSync(r.args[0] as number).gid)}`;
        },
      );
      expect(created.result.temp).toBe('tmpfile');
      expect(created.steps).toEqual(['open O_TMPFILE', 'write', 'fchmod', 'fchown', 'fsync', 'link fd -> s.json', 'close', 'fsync-dir']);
      expect(owner).toBe(`${String(OTHER)}:${String(OTHER_GID)}`);
      // Replaced by root, the file keeps its owner (HERMES_UID here, which root may replace).
      const replaced = trace(() => atomicWriteSync(file, 'y', { kind: 'sessions', env }));
      expect(replaced.result.temp).toBe('tmpfile');
      expect(replaced.steps).toEqual(['open O_TMPFILE', 'write', 'fchmod', 'fchown', 'fsync', 'link fd -> <tmp>', 'close', 'link s.json -> <bak>', 'rename <tmp> -> s.json', 'fsync-dir', 'unlink <bak>']);
      const st = fs.statSync(file);
      expect([st.uid, st.gid, fs.readFileSync(file, 'utf8')]).toEqual([OTHER, OTHER_GID, 'y']);
      expect(ls(dir)).toEqual(['s.json']);
    });
  });
});
