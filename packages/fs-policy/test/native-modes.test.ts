// The anchor modes: which layer makes each step (HERMES_FS_ANCHOR, the loader's report), the resolver's verdicts
// in native mode, a bad-argument fuzz of the addon in a child process, and async calls that leave the event loop free.
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { tempRoot } from '@hermes/test-utils';
import { atomicWriteSync, atomicWrite, FsPolicyError, privateAppendSync, secureMkdirSync, setLogger, silentLogger } from '../src/index.js';
import { nativeStepCount } from '../src/internal/native-ops.js';
import { anchorInfo, platformPackage, resetNativeForTests } from '../src/native.js';
import { caught, fixture, tempEnv } from './helpers.js';
import { describeNative, thrown } from './native-support.js';

const figures: string[] = [];
afterAll(() => {
  console.log(`native modes: ${figures.join('; ')}`);
});

const saved = process.env.HERMES_FS_ANCHOR;
function useMode(mode: string | undefined): void {
  if (mode === undefined) delete process.env.HERMES_FS_ANCHOR;
  else process.env.HERMES_FS_ANCHOR = mode;
  resetNativeForTests();
}
afterEach(() => {
  useMode(saved);
  setLogger(silentLogger);
});
setLogger(silentLogger);

describeNative('anchor modes', (b) => {
  // false before Linux 5.6 and under qemu-user (tooling/scripts/arm64-test.sh): the layer then steps with openat.
  const openat2 = b.openat2Probe().available;
  it('HERMES_FS_ANCHOR decides the layer, anchorInfo() says which and why, and only the native mode makes native steps', () => {
    useMode('procfd');
    expect(anchorInfo()).toEqual({ mode: 'procfd', reason: 'HERMES_FS_ANCHOR=procfd', openat2: false });
    const env = tempEnv();
    const before = nativeStepCount();
    atomicWriteSync(path.join(env.home, 'sessions', 'a.json'), '{}', { kind: 'sessions', env });
    expect(nativeStepCount() - before).toBe(0);

    useMode('native');
    expect(anchorInfo()).toEqual(
      openat2
        ? { mode: 'native', reason: 'the addon is loaded and the kernel has openat2', openat2: true }
        : { mode: 'native', reason: 'the addon is loaded; the kernel has no openat2 (openat per component)', openat2: false },
    );
    const start = nativeStepCount();
    atomicWriteSync(path.join(env.home, 'sessions', 'b.json'), '{}', { kind: 'sessions', env });
    const steps = nativeStepCount() - start;
    expect(steps).toBeGreaterThanOrEqual(3); // at least: the directory, the temp file's open, the rename
    expect(fs.readFileSync(path.join(env.home, 'sessions', 'b.json'), 'utf8')).toBe('{}');
    figures.push(`atomic write: ${String(steps)} native steps`);
  });

  it('an unknown HERMES_FS_ANCHOR is one warning, and the addon is used', () => {
    const lines: string[] = [];
    const keep = (m: string): void => {
      lines.push(m);
    };
    setLogger({ debug: () => undefined, info: () => undefined, warn: keep, error: keep });
    useMode('fast');
    expect(anchorInfo().mode).toBe('native');
    anchorInfo();
    expect(lines).toEqual(['HERMES_FS_ANCHOR="fast" ignored: only "native" or "procfd"']);
  });

  it('a link leaving the home: openat2 refuses it with EXDEV, and the native resolver says ESYMLINK_ESCAPE, creating nothing', () => {
    useMode('native');
    const env = tempEnv();
    const outside = `${path.dirname(env.home)}/outside`;
    fs.mkdirSync(outside);
    fs.symlinkSync('../outside', path.join(env.home, 'logs'));
    const home = fs.openSync(env.home, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    const c = b.constants;
    const kernel = thrown(() => b.openat2(home, 'logs/x', c.O_PATH, 0, c.RESOLVE_BENEATH | c.RESOLVE_NO_MAGICLINKS));
    fs.closeSync(home);
    expect([kernel.code, kernel.errno]).toEqual(openat2 ? ['EXDEV', -18] : ['ENOSYS', -38]);
    const before = nativeStepCount();
    const e = caught(() => secureMkdirSync(path.join(env.home, 'logs', 'x'), 'logs', { env }));
    const e2 = caught(() => privateAppendSync(path.join(env.home, 'logs', 'x.log'), 'line\n', { kind: 'logs', env }));
    expect([e.code, e2.code]).toEqual(['ESYMLINK_ESCAPE', 'ESYMLINK_ESCAPE']);
    figures.push(`escaping link: openat2 ${kernel.code ?? '?'}, resolver ${e.code}`);
    expect(e).toBeInstanceOf(FsPolicyError);
    expect(nativeStepCount() - before).toBeGreaterThan(0);
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('a failure reads the same in both modes: code, errno, message and hint', async () => {
    const env = tempEnv();
    fs.mkdirSync(path.join(env.home, 'sessions'));
    fs.writeFileSync(path.join(env.home, 'sessions', 'file'), 'x');
    const failures = (): string[][] =>
      [
        () => atomicWriteSync(path.join(env.home, 'sessions', 'n'.repeat(300)), 'x', { kind: 'sessions', env }),
        () => privateAppendSync(path.join(env.home, 'sessions', 'file', 'x.log'), 'x\n', { kind: 'sessions', env }),
      ].map((fn) => {
        const e = caught(fn);
        return [e.code, String(e.errno), e.message, e.hint];
      });
    useMode('procfd');
    const procfd = failures();
    const asyncProcfd = await atomicWrite(path.join(env.home, 'sessions', 'a'.repeat(256)), 'x', { kind: 'sessions', env }).catch((e: unknown) => (e as FsPolicyError).message);
    useMode('native');
    const before = nativeStepCount();
    expect(failures()).toEqual(procfd);
    expect(await atomicWrite(path.join(env.home, 'sessions', 'a'.repeat(256)), 'x', { kind: 'sessions', env }).catch((e: unknown) => (e as FsPolicyError).message)).toBe(asyncProcfd);
    expect(nativeStepCount() - before).toBeGreaterThan(0);
    expect(procfd[0]?.slice(0, 2)).toEqual(['ENAMETOOLONG', '-36']);
    figures.push(`errors: ${String(procfd.length + 1)} failures identical in both modes`);
  });

  it('async operations in native mode: the same results, through the addon', async () => {
    useMode('native');
    const env = tempEnv();
    const before = nativeStepCount();
    const r = await atomicWrite(path.join(env.home, 'pending_messages', 'p.json'), 'x', { kind: 'pending-messages', env });
    expect([r.mode.toString(8), fs.readFileSync(r.path, 'utf8')]).toEqual(['600', 'x']);
    expect(nativeStepCount() - before).toBeGreaterThanOrEqual(3);
  });

  it('a bad-argument fuzz (5,000 random calls, sync and async) in a child: no crash, every outcome typed', () => {
    const pkg = platformPackage() ?? '';
    const addon = createRequire(import.meta.url).resolve(pkg);
    const scratch = tempRoot('hermes-fuzz-');
    const held = (p: string): string => {
      const st = fs.statSync(p);
      return `${String(st.uid)}:${String(st.gid)}:${st.mode.toString(8)}`;
    };
    // What holds the scratch directory (the system temp dir) must come out as it went in.
    const around = [path.dirname(scratch), scratch].map(held);
    const r = spawnSync(process.execPath, [fixture('native-fuzz.mjs'), addon, scratch, '5000', '27'], { encoding: 'utf8', timeout: 60_000 });
    expect([r.status, r.signal, r.stderr]).toEqual([0, null, '']);
    expect([path.dirname(scratch), scratch].map(held)).toEqual(around);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { calls: number; typedCalls: number; asyncCalls: number; returned: number; argErrors: number; systemErrors: number; untyped: number };
    expect(out.calls).toBe(5000);
    expect(out.untyped).toBe(0);
    expect(out.returned + out.argErrors + out.systemErrors).toBe(5000);
    expect(out.typedCalls).toBeGreaterThan(2000);
    expect(out.systemErrors).toBeGreaterThan(500);
    figures.push(`fuzz: ${String(out.calls)} calls (${String(out.asyncCalls)} async, ${String(out.typedCalls)} well-typed): ${String(out.returned)} returned, ${String(out.argErrors)} argument errors, ${String(out.systemErrors)} system errors, 0 untyped, no crash`);
  });

  it('an async open blocked in the kernel (a FIFO without a writer) leaves the event loop running', async () => {
    const dir = tempRoot('hermes-fifo-');
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    const dfd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    let ticks = 0;
    const timer = setInterval(() => {
      ticks++;
    }, 5);
    const opening = b.openatAsync(dfd, 'fifo', fs.constants.O_RDONLY, 0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const during = ticks;
    const writer = fs.openSync(path.join(dir, 'fifo'), fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    const fd = await opening;
    clearInterval(timer);
    fs.closeSync(writer);
    fs.closeSync(fd);
    fs.closeSync(dfd);
    expect(during).toBeGreaterThanOrEqual(10);
    figures.push(`event loop: ${String(during)} timer ticks during a 200 ms blocked async open`);
  });
});
