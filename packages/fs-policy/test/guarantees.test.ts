/**
 * The guarantees of the descriptor-anchored resolver that do not need a racing second uid: each case is set
 * up deterministically through the fault port (the exact moment another process would act) or a child
 * process with the environment it needs.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { describeNeeds, lastJson, modeOf, runNode, tempRoot } from '@hermes/test-utils';
import { setFaultHook, type Req } from '../src/internal/io.js';
import {
  appendJsonLineSync,
  atomicWrite,
  atomicWriteSync,
  ensureFileSync,
  ensureHermesHomeSync,
  loadEnvironment,
  readRegularFileSync,
  openAppendHandle,
  openAppendHandleSync,
  privateAppendSync,
  secureMkdirSync,
  setLogger,
  silentLogger,
} from '../src/index.js';
import { caught, fixture, ls, tempEnv } from './helpers.js';

setLogger(silentLogger);
afterEach(() => {
  setFaultHook(undefined);
});

/** A managed environment on a fresh 2770 home (others may rename entries: moves out are watched). */
function managedEnv(): ReturnType<typeof tempEnv> {
  const env = tempEnv({ managed: true });
  fs.chmodSync(env.home, 0o2770);
  return env;
}

/** Calls `fn` once, the first time a request matches. */
function once(match: (req: Req) => boolean, fn: () => void): void {
  let done = false;
  setFaultHook((req) => {
    if (!done && match(req)) {
      done = true;
      fn();
    }
    return undefined;
  });
}

describe('data is validated before any I/O', () => {
  for (const [what, value] of [
    ['an object', { a: 1 }],
    ['a number', 42],
    ['null', null],
    ['an ArrayBuffer', new ArrayBuffer(8)],
    ['a Uint16Array (length is not its byte count)', new Uint16Array([0x6868, 0x6969])],
    ['a DataView', new DataView(new ArrayBuffer(4))],
  ] as const) {
    it(`atomicWrite of ${what}: EINVALID_DATA, the file keeps its bytes, no temp file (sync and async)`, async () => {
      const env = tempEnv();
      const f = path.join(env.home, 'pending_messages', 'p.json');
      atomicWriteSync(f, 'ORIGINAL', { kind: 'pending-messages', env });
      const e = caught(() => atomicWriteSync(f, value as unknown as string, { kind: 'pending-messages', env }));
      expect([e.code, e.step, e.path]).toEqual(['EINVALID_DATA', 'serialize', f]);
      await expect(atomicWrite(f, value as unknown as string, { kind: 'pending-messages', env })).rejects.toMatchObject({ code: 'EINVALID_DATA' });
      expect(() => privateAppendSync(path.join(env.home, 'trajectories', 't.jsonl'), value as unknown as string, { kind: 'trajectories', env })).toThrow(
        expect.objectContaining({ code: 'EINVALID_DATA' }) as Error,
      );
      expect(fs.readFileSync(f, 'utf8')).toBe('ORIGINAL');
      expect(ls(path.dirname(f))).toEqual(['p.json']);
      expect(fs.existsSync(path.join(env.home, 'trajectories', 't.jsonl'))).toBe(false);
    });
  }

  it('a Buffer and a Uint8Array are written byte for byte', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'pending_messages', 'b.bin');
    atomicWriteSync(f, Buffer.from([0, 1, 2, 255]), { kind: 'pending-messages', env });
    expect([...fs.readFileSync(f)]).toEqual([0, 1, 2, 255]);
    atomicWriteSync(f, new Uint8Array([7, 8]), { kind: 'pending-messages', env });
    expect([...fs.readFileSync(f)]).toEqual([7, 8]);
  });
});

describe('the append handle never writes into a closed or reused descriptor, and keeps issue order', () => {
  it('closeSync with queued async appends writes them first; each promise resolves; nothing reaches a file opened next', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'h.jsonl');
    const h = await openAppendHandle(f, { kind: 'trajectories', env });
    const pending = [h.append('{"n":1}\n'), h.appendJson({ n: 2 }), h.append('{"n":3}\n')];
    h.closeSync(); // same turn: nothing was handed to the kernel yet
    const other = path.join(env.home, 'trajectories', 'other.jsonl');
    const fd = fs.openSync(other, 'w'); // very likely to reuse the handle's descriptor number
    await expect(Promise.all(pending)).resolves.toEqual([8, 8, 8]);
    await new Promise((r) => setTimeout(r, 20));
    fs.closeSync(fd);
    expect(fs.readFileSync(f, 'utf8')).toBe('{"n":1}\n{"n":2}\n{"n":3}\n');
    expect(fs.readFileSync(other, 'utf8')).toBe('');
    expect(() => h.appendSync('x\n')).toThrow(expect.objectContaining({ code: 'ECLOSED' }) as Error);
  });

  it('closeSync while a batch is in flight closes the descriptor only after that batch settles', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'h.jsonl');
    const h = await openAppendHandle(f, { kind: 'trajectories', env });
    const first = h.append(`${'a'.repeat(1 << 20)}\n`); // a big batch: in flight across the next turn
    await Promise.resolve();
    await Promise.resolve(); // the drain has started the write
    const second = h.append('{"n":2}\n');
    h.closeSync();
    const other = path.join(env.home, 'trajectories', 'other.jsonl');
    const fd = fs.openSync(other, 'w');
    await first;
    await second;
    await new Promise((r) => setTimeout(r, 20));
    fs.closeSync(fd);
    const text = fs.readFileSync(f, 'utf8');
    expect(text.split('\n').filter(Boolean).map((l) => l.length)).toEqual(expect.arrayContaining([1 << 20, '{"n":2}'.length]));
    expect(fs.readFileSync(other, 'utf8')).toBe('');
  });

  it('sync appends after async ones keep issue order (queued records go first)', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'o.jsonl');
    const h = openAppendHandleSync(f, { kind: 'trajectories', env });
    const p1 = h.append('1\n');
    const p2 = h.append('2\n');
    h.appendSync('3\n');
    const p4 = h.append('4\n');
    h.appendManySync(['5\n', '6\n']);
    await Promise.all([p1, p2, p4]);
    await h.close();
    expect(fs.readFileSync(f, 'utf8')).toBe('1\n2\n3\n4\n5\n6\n');
  });
});

describe('rollback after a failed directory fsync tells the truth and never clobbers', () => {
  function failDirFsync(beforeFailing: () => void): void {
    setFaultHook((req) => {
      if (req.step === 'fsync-dir' && req.op === 'fsync') {
        beforeFailing();
        throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO', errno: -5 });
      }
      return undefined;
    });
  }

  it('the previous version is restored when the target is still ours', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'pending_messages', 'p.json');
    atomicWriteSync(f, 'OLD', { kind: 'pending-messages', env });
    failDirFsync(() => undefined);
    const e = caught(() => atomicWriteSync(f, 'NEW', { kind: 'pending-messages', env }));
    expect([e.code, e.step, e.committed]).toEqual(['EIO', 'fsync-dir', false]);
    expect(e.message).toContain(`${f} was restored to its previous version`);
    expect(fs.readFileSync(f, 'utf8')).toBe('OLD');
    expect(ls(path.dirname(f))).toEqual(['p.json']);
  });

  it('another writer\'s newer version is left in place, the message says so, and no rollback file remains', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'pending_messages', 'p.json');
    atomicWriteSync(f, 'OLD', { kind: 'pending-messages', env });
    failDirFsync(() => {
      fs.writeFileSync(`${f}.other`, 'OTHER WRITER');
      fs.renameSync(`${f}.other`, f); // another process replaced the target after our rename
    });
    const e = caught(() => atomicWriteSync(f, 'NEW', { kind: 'pending-messages', env }));
    expect([e.code, e.committed]).toEqual(['EIO', false]);
    expect(e.message).toContain('was replaced by another writer meanwhile; it is left as that writer made it');
    expect(fs.readFileSync(f, 'utf8')).toBe('OTHER WRITER');
    expect(ls(path.dirname(f))).toEqual(['p.json']);
  });

  it('a new file is removed again when the directory fsync fails', () => {
    const env = tempEnv();
    const f = path.join(env.home, 'pending_messages', 'new.json');
    fs.mkdirSync(path.dirname(f));
    failDirFsync(() => undefined);
    const e = caught(() => atomicWriteSync(f, 'NEW', { kind: 'pending-messages', env }));
    expect(e.message).toContain(`the new file ${f} was removed again`);
    expect(ls(path.dirname(f))).toEqual([]);
  });
});

describe('a directory moved out of the home while in use (managed: the group can rename entries)', () => {
  it('atomic write: moved before the commit, nothing is left in the moved directory', () => {
    const env = managedEnv();
    const dir = path.join(env.home, 'pending_messages');
    fs.mkdirSync(dir);
    const away = path.join(tempRoot(), 'stolen');
    once((req) => req.step === 'close' && req.op === 'close', () => {
      fs.renameSync(dir, away);
    });
    const e = caught(() => atomicWriteSync(path.join(dir, 'p.json'), 'SECRET', { kind: 'pending-messages', env }));
    expect([e.code, e.path]).toEqual(['ERACE', dir]);
    expect(e.message).toContain(`moved out of the home (to ${away})`);
    expect(ls(away)).toEqual([]);
  });

  it('atomic write: moved after the rename, the moved directory is put back as it was moved (previous version)', () => {
    const env = managedEnv();
    const dir = path.join(env.home, 'pending_messages');
    const f = path.join(dir, 'p.json');
    atomicWriteSync(f, 'OLD', { kind: 'pending-messages', env });
    const away = path.join(tempRoot(), 'stolen');
    once((req) => req.step === 'fsync-dir', () => {
      fs.renameSync(dir, away);
    });
    expect(caught(() => atomicWriteSync(f, 'NEW', { kind: 'pending-messages', env })).code).toBe('ERACE');
    expect(ls(away)).toEqual(['p.json']);
    expect(fs.readFileSync(path.join(away, 'p.json'), 'utf8')).toBe('OLD');
  });

  it('append: a file moved out under the writer is reported (the record is named as having gone there)', () => {
    const env = managedEnv();
    const dir = path.join(env.home, 'moa-traces');
    const f = path.join(dir, 's.jsonl');
    appendJsonLineSync(f, { n: 1 }, { kind: 'moa-traces', env });
    const away = path.join(tempRoot(), 'stolen');
    once((req) => req.op === 'write', () => {
      fs.renameSync(dir, away);
    });
    const e = caught(() => appendJsonLineSync(f, { n: 2 }, { kind: 'moa-traces', env }));
    expect([e.code, e.step]).toEqual(['ERACE', 'write']);
    expect(e.message).toContain(`it is now ${path.join(away, 's.jsonl')}`);
  });

  it('only homes others can rename in are watched: readlink checks on managed, none on an unmanaged 0700 home', () => {
    const readlinks = (env: ReturnType<typeof tempEnv>): number => {
      const f = path.join(env.home, 'moa-traces', 's.jsonl');
      appendJsonLineSync(f, { n: 1 }, { kind: 'moa-traces', env });
      let n = 0;
      setFaultHook((req) => {
        if (req.op === 'readlink') n++;
        return undefined;
      });
      appendJsonLineSync(f, { n: 2 }, { kind: 'moa-traces', env });
      setFaultHook(undefined);
      return n;
    };
    expect(readlinks(tempEnv())).toBe(0);
    expect(readlinks(managedEnv())).toBeGreaterThanOrEqual(2); // the directory at open, the file after the write
  });
});

describe('managed modes hold whatever the umask', () => {
  for (const [umask, dirMode, dbMode] of [
    [0o000, '2770', '0660'],
    [0o022, '2750', '0640'],
    [0o007, '2770', '0660'],
  ] as const) {
    it(`umask ${umask.toString(8).padStart(3, '0')}: created directories ${dirMode}, state files ${dbMode}, payloads 0600`, () => {
      const root = tempRoot();
      const home = path.join(root, 'home');
      fs.mkdirSync(home);
      fs.chmodSync(home, 0o2770);
      const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
      const a = runNode(fixture('write-kind.mjs'), [path.join(home, 'pending_messages'), 'pending-messages', 'p.json', 'atomic'], { umask, env });
      expect(a.status, a.stderr).toBe(0);
      const b = runNode(fixture('write-kind.mjs'), [path.join(home, 'state'), 'state-db', 'state.db', 'atomic'], { umask, env });
      expect(b.status, b.stderr).toBe(0);
      expect([modeOf(path.join(home, 'pending_messages')), modeOf(path.join(home, 'pending_messages', 'p.json'))]).toEqual([dirMode, '0600']);
      expect([modeOf(path.join(home, 'state')), modeOf(path.join(home, 'state', 'state.db'))]).toEqual([dirMode, dbMode]);
    });
  }
});

describe('refusals that come before any I/O', () => {
  it('a path with .. or NUL is refused', () => {
    const env = tempEnv();
    expect(caught(() => atomicWriteSync(`${env.home}/pending_messages/../x.json`, 'x', { kind: 'pending-messages', env })).code).toBe('EINVALID_PATH');
    expect(caught(() => secureMkdirSync(`${env.home}/a\0b`, 'sessions', { env })).code).toBe('EINVALID_PATH');
    expect(ls(env.home)).toEqual([]);
  });

  it('HERMES_HOME=/ is never used as a home: EDANGEROUS_HOME, and not one mutating syscall is attempted', () => {
    const env = loadEnvironment({ home: '/', env: { HERMES_MANAGED: 'false', HERMES_UID: '4242' } });
    const mutating: string[] = [];
    setFaultHook((req) => {
      if (['mkdir', 'fchmod', 'chmod', 'fchown', 'rename', 'link', 'unlink', 'write'].includes(req.op) || (req.op === 'open' && ((req.args[1] as number) & fs.constants.O_CREAT) !== 0)) {
        mutating.push(`${req.op} ${req.path}`);
        throw new Error('a mutating syscall under HERMES_HOME=/');
      }
      return undefined;
    });
    for (const call of [
      () => atomicWriteSync('/pending_messages/p.json', 'x', { kind: 'pending-messages', env }),
      () => secureMkdirSync('/pending_messages', 'pending-messages', { env }),
      () => appendJsonLineSync('/moa-traces/s.jsonl', {}, { kind: 'moa-traces', env }),
      () => ensureHermesHomeSync({ env }),
    ]) {
      expect(caught(call).code).toBe('EDANGEROUS_HOME');
    }
    expect(mutating).toEqual([]);
  });
});

describe('no /proc, Worker threads: no untyped crash, the umask is never changed', () => {
  it('in a Worker thread, loading the environment and writing work (no ERR_WORKER_UNSUPPORTED_OPERATION)', async () => {
    const env = tempEnv();
    const dist = new URL('../dist/index.js', import.meta.url).href;
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(${JSON.stringify(dist)}).then((m) => {
        const env = m.loadEnvironment({ home: workerData.home, env: { HERMES_MANAGED: 'false' } });
        const r = m.atomicWriteSync(workerData.home + '/pending_messages/w.json', 'from a worker', { kind: 'pending-messages', env });
        parentPort.postMessage({ umask: env.umask, source: env.umaskSource, mode: r.mode });
      }, (err) => parentPort.postMessage({ error: String(err) }));`;
    const result = await new Promise<unknown>((resolve, reject) => {
      const w = new Worker(code, { eval: true, workerData: { home: env.home } });
      w.once('message', resolve);
      w.once('error', reject);
    });
    expect(result).toEqual({ umask: expect.any(Number) as number, source: 'proc', mode: 0o600 });
    expect(fs.readFileSync(path.join(env.home, 'pending_messages', 'w.json'), 'utf8')).toBe('from a worker');
  });

  it('process.umask is never called (not even to read it)', () => {
    const spy = vi.spyOn(process, 'umask');
    try {
      const env = tempEnv();
      atomicWriteSync(path.join(env.home, 'pending_messages', 'p.json'), 'x', { kind: 'pending-messages', env });
      loadEnvironment({ home: env.home });
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describeNeeds(['root', 'linux', 'unshare'], 'without /proc (a mount namespace with procfs unmounted)', () => {
  it('the environment says fallback and an assumed umask; writes still land with the policy modes; no crash', () => {
    const env = tempEnv();
    fs.chownSync(env.home, 65534, 65534); // a single unprivileged user in its own home (root is refused in fallback: fail-closed.test.ts)
    const r = spawnSync(
      'unshare',
      ['--mount', '--propagation', 'private', '/bin/sh', '-c', 'umount -l /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$0" "$@"', process.execPath, fixture('no-proc.mjs'), env.home],
      { encoding: 'utf8', env: { PATH: process.env.PATH }, timeout: 30_000 },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(lastJson({ status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr })).toEqual({
      resolver: 'fallback',
      umaskSource: 'assumed',
      payload: '0600',
      dir: '0700',
      umaskCalls: 0,
    });
  });
});

describe('typed errors, never a hang, for special files met by the primitives', () => {
  it('a FIFO as the marker, the target of an append, an atomic write, ensureFile, a read: typed refusal at once', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'moa-traces');
    fs.mkdirSync(dir);
    const fifo = path.join(dir, 'f.jsonl');
    execFileSync('mkfifo', [fifo, path.join(env.home, '.managed')]);
    const t0 = Date.now();
    expect(caught(() => appendJsonLineSync(fifo, {}, { kind: 'moa-traces', env })).code).toBe('ENOTREGULAR');
    expect(caught(() => atomicWriteSync(fifo, 'x', { kind: 'moa-traces', env })).code).toBe('ENOTREGULAR');
    expect(caught(() => ensureFileSync(fifo, { kind: 'moa-traces', env })).code).toBe('ENOTREGULAR');
    expect(caught(() => readRegularFileSync(fifo)).code).toBe('ENOTREGULAR');
    const reloaded = loadEnvironment({ home: env.home, env: {} });
    // Not a regular file: no evidence (ignored and reported), never read, never a hang.
    expect(reloaded.managed).toMatchObject({ managed: false, system: null, source: 'none', marker: 'untrusted' });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(() => fs.statSync(fifo).isFIFO()).not.toThrow();
  }, 10_000);
});
