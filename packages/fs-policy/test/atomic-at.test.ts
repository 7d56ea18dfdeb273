import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { itNeeds, modeOf, tempRoot } from '@hermes/test-utils';
import { setFaultHook } from '../src/internal/io.js';
import { atomicWriteAt, atomicWriteAtSync, atomicWriteSync, holdDirectorySync, setLogger, silentLogger } from '../src/index.js';
import { caught, ls, tempEnv } from './helpers.js';

setLogger(silentLogger);
afterEach(() => {
  setFaultHook(undefined);
});

function spool(): { env: ReturnType<typeof tempEnv>; dir: string } {
  const env = tempEnv();
  const dir = path.join(env.home, 'pending_messages');
  fs.mkdirSync(dir, { mode: 0o700 });
  return { env, dir };
}

describe('atomicWriteAt: an entry of a held directory', () => {
  it('writes the entry with the kind mode, leaves no temp, and reports the logical path', async () => {
    const { env, dir } = spool();
    const held = holdDirectorySync(dir, { env });
    try {
      const r = atomicWriteAtSync(held, 'a.json', '{"a":1}', { kind: 'pending-messages', env });
      const r2 = await atomicWriteAt(held, 'b.json', Buffer.from('{"b":2}'), { kind: 'pending-messages', env, durable: 'file' });
      expect([r.path, r.bytes, r.mode.toString(8), r.createdFile]).toEqual([path.join(dir, 'a.json'), 7, '600', true]);
      expect([r2.path, r2.bytes, r2.durable]).toEqual([path.join(dir, 'b.json'), 7, 'file']);
      expect(ls(dir)).toEqual(['a.json', 'b.json']);
      expect(modeOf(path.join(dir, 'a.json'))).toBe('0600');
      expect(fs.readFileSync(path.join(dir, 'b.json'), 'utf8')).toBe('{"b":2}');
    } finally {
      held.close();
    }
  });

  it('acts in the directory that was held, after it was renamed and another took its name', () => {
    const { env, dir } = spool();
    const held = holdDirectorySync(dir, { env });
    try {
      fs.renameSync(dir, `${dir}.moved`);
      fs.mkdirSync(dir, { mode: 0o700 });
      atomicWriteAtSync(held, 'x.json', 'x', { kind: 'pending-messages', env });
      expect([ls(dir), ls(`${dir}.moved`)]).toEqual([[], ['x.json']]);
    } finally {
      held.close();
    }
  });

  it('a directory closed while writes are under way keeps its descriptor until they settle: all land, then it is closed', async () => {
    const { env, dir } = spool();
    const held = holdDirectorySync(dir, { env });
    const fd = Number(path.basename(held.self));
    const writes = Array.from({ length: 8 }, (_, i) => atomicWriteAt(held, `w${String(i)}.json`, `{"i":${String(i)}}`, { kind: 'pending-messages', env }));
    held.close();
    const results = await Promise.all(writes);
    expect(results.map((r) => r.path)).toEqual(Array.from({ length: 8 }, (_, i) => path.join(dir, `w${String(i)}.json`)));
    expect(ls(dir)).toEqual(['w0.json', 'w1.json', 'w2.json', 'w3.json', 'w4.json', 'w5.json', 'w6.json', 'w7.json']);
    // Closed once the last write settled: the number no longer names this directory (nor anything, until reused).
    const now = fs.existsSync(`/proc/self/fd/${String(fd)}`) ? fs.readlinkSync(`/proc/self/fd/${String(fd)}`) : 'closed';
    expect(now === fs.realpathSync(dir)).toBe(false);
    expect(caught(() => atomicWriteAtSync(held, 'late.json', 'x', { kind: 'pending-messages', env })).code).toBe('EBADF');
  });

  it('refuses a link at the name that leads out of the held directory, and the outside file keeps its content', () => {
    const { env, dir } = spool();
    const outside = path.join(tempRoot(), 'victim.json');
    fs.writeFileSync(outside, 'keep');
    fs.symlinkSync(outside, path.join(dir, 'x.json'));
    const held = holdDirectorySync(dir, { env });
    try {
      const err = caught(() => atomicWriteAtSync(held, 'x.json', 'evil', { kind: 'pending-messages', env }));
      expect(err.code).toBe('ESYMLINK_ESCAPE');
      expect(fs.readFileSync(outside, 'utf8')).toBe('keep');
      expect(ls(dir)).toEqual(['x.json']);
    } finally {
      held.close();
    }
  });

  it('overwrite: false keeps an existing entry (EEXIST); a name with a slash and a closed directory are typed errors', () => {
    const { env, dir } = spool();
    fs.writeFileSync(path.join(dir, 'x.json'), 'old', { mode: 0o600 });
    const held = holdDirectorySync(dir, { env });
    expect(caught(() => atomicWriteAtSync(held, 'x.json', 'new', { kind: 'pending-messages', env, overwrite: false })).code).toBe('EEXIST');
    expect(fs.readFileSync(path.join(dir, 'x.json'), 'utf8')).toBe('old');
    expect(caught(() => atomicWriteAtSync(held, '../escape.json', 'new', { kind: 'pending-messages', env })).code).toBe('EINVALID_PATH');
    held.close();
    expect(caught(() => atomicWriteAtSync(held, 'y.json', 'new', { kind: 'pending-messages', env })).code).toBe('EBADF');
    expect(ls(dir)).toEqual(['x.json']);
    expect(fs.existsSync(path.join(env.home, 'escape.json'))).toBe(false);
  });

  /** Every path argument the kernel is given while `fn` runs. */
  function pathsOf(fn: () => void): string[] {
    const paths: string[] = [];
    setFaultHook((req) => {
      for (const a of req.args) if (typeof a === 'string') paths.push(a);
      return undefined;
    });
    try {
      fn();
    } finally {
      setFaultHook(undefined);
    }
    return paths;
  }

  it('makes no lookup above the held directory: every path it passes to the kernel is the descriptor path', () => {
    const { env, dir } = spool();
    const held = holdDirectorySync(dir, { env });
    try {
      const paths = pathsOf(() => atomicWriteAtSync(held, 'x.json', 'x', { kind: 'pending-messages', env }));
      expect(paths.filter((p) => !p.startsWith(`${held.self}/`) && p !== held.self)).toEqual([]);
      expect(paths.length).toBeGreaterThan(0);
    } finally {
      held.close();
    }
  });

  itNeeds(['root'], 'as root: no chain walk per write — a write rooted at the descriptor path walks from / every time', () => {
    const { env, dir } = spool();
    const held = holdDirectorySync(dir, { env });
    try {
      const above = (paths: string[]): string[] => paths.filter((p) => !p.startsWith(`${held.self}/`) && p !== held.self);
      const control = above(pathsOf(() => atomicWriteSync(held.at('c.json'), 'c', { kind: 'pending-messages', env, root: held.self })));
      const ours = above(pathsOf(() => atomicWriteAtSync(held, 'h.json', 'h', { kind: 'pending-messages', env })));
      console.log(`paths looked up outside the held directory per write, as root: by descriptor path ${String(control.length)}, atomicWriteAt ${String(ours.length)}`);
      expect(control).toContain('/');
      expect(ours).toEqual([]);
      expect(ls(dir)).toEqual(['c.json', 'h.json']);
    } finally {
      held.close();
    }
  });
});

describe('HeldDirectory.openSync / unlinkSync: one entry, through the held descriptor', () => {
  it('open and remove act in the directory that was held after it was renamed and another took its name', () => {
    const { env, dir } = spool();
    fs.writeFileSync(path.join(dir, 'a.json'), 'held');
    const held = holdDirectorySync(dir, { env });
    try {
      fs.renameSync(dir, `${dir}.moved`);
      fs.mkdirSync(dir, { mode: 0o700 });
      fs.writeFileSync(path.join(dir, 'a.json'), 'impostor');
      const fd = held.openSync('a.json', fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      try {
        expect(fs.readFileSync(fd, 'utf8')).toBe('held');
      } finally {
        fs.closeSync(fd);
      }
      held.unlinkSync('a.json');
      expect([ls(dir), ls(`${dir}.moved`)]).toEqual([['a.json'], []]);
    } finally {
      held.close();
    }
  });

  it('fs-shaped errors (ENOENT, ELOOP on a link) that explain() names by the logical path; a closed directory and a slash are typed', () => {
    const { env, dir } = spool();
    fs.symlinkSync('/etc/passwd', path.join(dir, 'link.json'));
    const held = holdDirectorySync(dir, { env });
    const thrown = (fn: () => unknown): NodeJS.ErrnoException => {
      try {
        fn();
      } catch (err) {
        return err as NodeJS.ErrnoException;
      }
      throw new Error('expected an error');
    };
    const missing = thrown(() => {
      held.unlinkSync('missing.json');
    });
    const link = thrown(() => held.openSync('link.json', fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW));
    expect([missing.code, link.code]).toEqual(['ENOENT', 'ELOOP']);
    expect(held.explain(missing).path).toBe(path.join(dir, 'missing.json'));
    expect(caught(() => held.openSync('a/b', fs.constants.O_RDONLY)).code).toBe('EINVALID_PATH');
    held.close();
    expect(
      caught(() => {
        held.unlinkSync('link.json');
      }).code,
    ).toBe('EUNEXPECTED');
    expect(fs.lstatSync(path.join(dir, 'link.json')).isSymbolicLink()).toBe(true);
  });
});
