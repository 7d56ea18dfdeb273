/**
 * Atomic writes tell the whole truth (issue 23, rows 10 and 13): a failed write whose cleanup fails too names
 * every file it left behind — in the error's `leftovers`, its message and a log line — and `overwrite: false`
 * works where the filesystem has no hard links (an exclusive create of the final name). The link-less
 * filesystem is made by the fault port (link fails EPERM, ENOTSUP, EOPNOTSUPP): the kernels CI runs on have no
 * vfat or other link-less filesystem to mount.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { setFaultHook, type Req } from '../src/testing.js';
import {
  atomicWrite,
  atomicWriteSync,
  FsPolicyError,
  setLogger,
  silentLogger,
  type FsPolicyLogger,
} from '../src/index.js';
import { caught, ls, tempEnv } from './helpers.js';

afterEach(() => {
  setFaultHook(undefined);
  setLogger(silentLogger);
});

const errno = (code: string, n: number): Error => Object.assign(new Error(`${code}: injected`), { code, errno: n });

/** The open of an unnamed temp (O_TMPFILE: `__O_TMPFILE` with O_DIRECTORY), made where the native layer is in force. */
const O_TMPFILE = 0o20000000 | fs.constants.O_DIRECTORY;
const isUnnamedOpen = (r: Req): boolean => r.op === 'open' && ((r.args[1] as number) & O_TMPFILE) === O_TMPFILE;

/** Collects the log lines of the package. */
function logLines(): { message: string; fields: Record<string, unknown> }[] {
  const lines: { message: string; fields: Record<string, unknown> }[] = [];
  const keep = (message: string, fields?: Readonly<Record<string, unknown>>): void => {
    lines.push({ message, fields: { ...fields } });
  };
  const logger: FsPolicyLogger = { debug: keep, info: keep, warn: keep, error: keep };
  setLogger(logger);
  return lines;
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

describe('row 10: a failed atomic write whose cleanup also fails', () => {
  it('row 10: the rename fails and so does every unlink: the .bak and the .tmp are named in leftovers, the message and the log', async () => {
    let named = 0;
    let onDisk = 0;
    let logged = 0;
    for (const form of ['sync', 'async'] as const) {
      const env = tempEnv();
      const dir = path.join(env.home, 'sessions');
      const file = path.join(dir, 's.json');
      atomicWriteSync(file, 'one', { kind: 'sessions', env });
      const lines = logLines();
      setFaultHook((r) => {
        if (r.op === 'rename') throw errno('EIO', -5);
        if (r.op === 'unlink') throw errno('EIO', -5);
        return undefined;
      });
      const e = form === 'sync' ? caught(() => atomicWriteSync(file, 'two', { kind: 'sessions', env })) : await caughtAsync(atomicWrite(file, 'two', { kind: 'sessions', env }));
      setFaultHook(undefined);
      const left = ls(dir).filter((n) => n !== 's.json');
      const bak = left.filter((n) => n.endsWith('.bak')).map((n) => path.join(dir, n));
      const tmp = left.filter((n) => n.endsWith('.tmp')).map((n) => path.join(dir, n));
      expect(bak.length, form).toBe(1);
      expect(tmp.length, form).toBe(1);
      onDisk += left.length;
      expect({ code: e.code, step: e.step, path: e.path, errno: e.errno, committed: e.committed }, form).toEqual({ code: 'EIO', step: 'rename', path: file, errno: -5, committed: false });
      expect(e.leftovers, form).toEqual([...bak, ...tmp]);
      expect(e.detail, form).toBe(`rename ${file} failed: EIO: injected; left behind: ${bak[0] ?? ''}, ${tmp[0] ?? ''}`);
      expect(e.hint, form).toContain(`remove ${bak[0] ?? ''} and ${tmp[0] ?? ''}`);
      named += e.leftovers.length;
      const line = lines.find((l) => l.message === 'atomic write failed and left files behind');
      expect(line?.fields, form).toMatchObject({ path: file, code: 'EIO', errno: -5, step: 'rename', leftovers: [...bak, ...tmp] });
      if (line !== undefined) logged += (line.fields.leftovers as string[]).length;
      expect(fs.readFileSync(file, 'utf8'), form).toBe('one');
    }
    console.log(`row 10: 2 failed writes (sync, async) with failing cleanup; files left on disk ${String(onDisk)}, named in the error ${String(named)}, named in the log ${String(logged)}`);
    expect(named).toBe(onDisk);
    expect(logged).toBe(onDisk);
  });

  it('row 10: a write cut short (ENOSPC) whose temp cannot be removed names the temp; without leftovers nothing is added', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'sessions');
    const file = path.join(dir, 's.json');
    fs.mkdirSync(dir, { mode: 0o700 });
    setFaultHook((r) => {
      // A filesystem without unnamed files: the named temp (an unnamed one leaves nothing to name here).
      if (isUnnamedOpen(r)) throw errno('EOPNOTSUPP', -95);
      if (r.op === 'write') throw errno('ENOSPC', -28);
      if (r.op === 'unlink') throw errno('EROFS', -30);
      return undefined;
    });
    const e = caught(() => atomicWriteSync(file, 'data', { kind: 'sessions', env }));
    setFaultHook(undefined);
    const tmp = ls(dir).map((n) => path.join(dir, n));
    expect(tmp.length).toBe(1);
    expect({ code: e.code, step: e.step, leftovers: e.leftovers }).toEqual({ code: 'ENOSPC', step: 'write', leftovers: tmp });
    expect(e.message).toContain(`; left behind: ${tmp[0] ?? ''} [ENOSPC at write: ${file}]`);
    // The same failure with a working unlink: no leftovers, the message as before.
    fs.rmSync(tmp[0] ?? '');
    setFaultHook((r) => {
      if (r.op === 'write') throw errno('ENOSPC', -28);
      return undefined;
    });
    const clean = caught(() => atomicWriteSync(file, 'data', { kind: 'sessions', env }));
    setFaultHook(undefined);
    expect(clean.leftovers).toEqual([]);
    expect(clean.detail).toBe(`write ${file} failed: ENOSPC: injected`);
    expect(ls(dir)).toEqual([]);
  });

  it('row 10: a committed write whose rollback copy cannot be removed says so in its warnings and the log', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'sessions');
    const file = path.join(dir, 's.json');
    atomicWriteSync(file, 'one', { kind: 'sessions', env });
    const lines = logLines();
    setFaultHook((r) => {
      if (r.op === 'unlink' && r.path.endsWith('.bak')) throw errno('EIO', -5);
      return undefined;
    });
    const r = atomicWriteSync(file, 'two', { kind: 'sessions', env });
    setFaultHook(undefined);
    const bak = ls(dir).filter((n) => n.endsWith('.bak')).map((n) => path.join(dir, n));
    expect(bak.length).toBe(1);
    expect(r.warnings).toContain(`${file}: left behind: ${bak[0] ?? ''}`);
    expect(lines.find((l) => l.message === 'atomic write left files behind')?.fields).toMatchObject({ path: file, leftovers: bak });
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
  });
});

describe('row 13: overwrite false without hard links', () => {
  it('row 13: overwrite false without hard links (link fails EPERM, ENOTSUP, EOPNOTSUPP): published by an exclusive create, no temp left, EEXIST kept', async () => {
    let published = 0;
    let refusedExisting = 0;
    for (const code of ['EPERM', 'ENOTSUP', 'EOPNOTSUPP']) {
      for (const form of ['sync', 'async'] as const) {
        const env = tempEnv();
        const dir = path.join(env.home, 'sessions');
        const file = path.join(dir, 'new.json');
        setFaultHook((r) => {
          if (r.op === 'link') throw errno(code, -1);
          return undefined;
        });
        const r = form === 'sync' ? atomicWriteSync(file, 'first', { kind: 'sessions', env, overwrite: false }) : await atomicWrite(file, 'first', { kind: 'sessions', env, overwrite: false });
        expect({ created: r.createdFile, mode: r.mode }, `${code} ${form}`).toEqual({ created: true, mode: 0o600 });
        expect(r.warnings.some((w) => w.includes('published by an exclusive create')), `${code} ${form}`).toBe(true);
        expect(fs.readFileSync(file, 'utf8')).toBe('first');
        expect(fs.statSync(file).mode & 0o7777).toBe(0o600);
        expect(ls(dir)).toEqual(['new.json']);
        published++;
        // No clobbering: an existing file is EEXIST (checked before, and by O_EXCL at the publish).
        const e = form === 'sync' ? caught(() => atomicWriteSync(file, 'second', { kind: 'sessions', env, overwrite: false })) : await caughtAsync(atomicWrite(file, 'second', { kind: 'sessions', env, overwrite: false }));
        expect(e.code).toBe('EEXIST');
        expect(fs.readFileSync(file, 'utf8')).toBe('first');
        refusedExisting++;
        setFaultHook(undefined);
      }
    }
    console.log(`row 13: overwrite false without hard links: ${String(published)} files published by an exclusive create (link EPERM/ENOTSUP/EOPNOTSUPP x sync/async), ${String(refusedExisting)} existing files refused EEXIST, 0 temps left`);
    expect(published).toBe(6);
  });

  it('row 13: a file planted at the name between the check and the publish is never overwritten (O_EXCL at the publish)', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'sessions');
    const file = path.join(dir, 'new.json');
    setFaultHook((r) => {
      if (r.op === 'link') {
        fs.writeFileSync(file, 'theirs');
        throw errno('EPERM', -1);
      }
      return undefined;
    });
    const e = caught(() => atomicWriteSync(file, 'mine', { kind: 'sessions', env, overwrite: false }));
    setFaultHook(undefined);
    expect({ code: e.code, step: e.step, leftovers: e.leftovers }).toEqual({ code: 'EEXIST', step: 'link', leftovers: [] });
    expect(fs.readFileSync(file, 'utf8')).toBe('theirs');
    expect(ls(dir)).toEqual(['new.json']);
  });

  it('row 13: a failure while writing the published file removes it again (it is still ours), and the temp', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'sessions');
    const file = path.join(dir, 'new.json');
    let linked = false;
    setFaultHook((r) => {
      if (r.op === 'link') {
        linked = true;
        throw errno('EPERM', -1);
      }
      if (linked && r.op === 'write') throw errno('ENOSPC', -28);
      return undefined;
    });
    const e = caught(() => atomicWriteSync(file, 'mine', { kind: 'sessions', env, overwrite: false }));
    setFaultHook(undefined);
    expect({ code: e.code, step: e.step, leftovers: e.leftovers }).toEqual({ code: 'ENOSPC', step: 'write', leftovers: [] });
    expect(ls(dir)).toEqual([]);
  });
});
