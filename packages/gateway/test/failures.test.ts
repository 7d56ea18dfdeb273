import * as fs from 'node:fs';
import * as path from 'node:path';
import { isRoot, lastJson, runNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { type FlushReport, flushOverflowSync, flushPending, flushPendingSync, type GatewayLogger } from '../src/index.js';
import { fixture, memoryLogger, names, spoolDir, tempDir } from './helpers.js';

const NOBODY = 65534;

// A payload write that fails midway (after its temp file is open) is not exercised here: every case below
// fails before a payload file is opened (directory, profile, serialisation).
describe('flush failures before any payload file is opened are reported, never thrown, and leave no file', () => {
  it('an unwritable home: EACCES naming the path, the uid and the fix; nothing created', () => {
    const home = path.join(tempDir(), 'home');
    fs.mkdirSync(home);
    let uid: number;
    let gid: number;
    if (isRoot) {
      // Root writes anywhere; the writer is an unprivileged uid that does not own the 0755 home.
      uid = NOBODY;
      gid = NOBODY;
      fs.chmodSync(home, 0o755);
    } else {
      uid = process.getuid?.() ?? -1;
      gid = process.getgid?.() ?? -1;
      fs.chmodSync(home, 0o500);
    }
    const r = runNode(fixture('flush.mjs'), [JSON.stringify({ pending: { 'agent:main:telegram:dm:1': 'hello' } })], {
      umask: 0o022,
      env: { HERMES_HOME: home },
      ...(isRoot ? { uid, gid } : {}),
    });
    const report = lastJson<FlushReport>(r);
    fs.chmodSync(home, 0o755);
    expect(r.status, r.stderr).toBe(0);
    expect(report.written).toEqual([]);
    expect(report.failed).toHaveLength(1);
    expect(report.failed[0]).toMatchObject({
      code: 'EACCES',
      step: 'mkdir',
      path: path.join(home, 'pending_messages'),
      uid,
      kind: 'pending',
      sessionKey: 'agent:main:telegram:dm:1',
    });
    expect(report.failed[0]?.hint).toContain('hermes-fs doctor --fix');
    expect(names(home)).toEqual([]);
    // The same story reached stderr through the default logger.
    expect(r.stderr).toContain('NOT written');
    expect(r.stderr).toContain(path.join(home, 'pending_messages'));
    expect(r.stderr).toContain(`uid ${uid}`);
    expect(r.stderr).toContain('code="EACCES"');
  });

  it('a deleted profile home: EPROFILE_MISSING, and the profile is not resurrected', async () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'profiles'));
    const home = path.join(root, 'profiles', 'deleted');
    const logger = memoryLogger();
    const reports = [
      await flushPending({ k: 'one' }, { home, logger }),
      flushPendingSync({ k: 'two' }, { home, logger }),
      flushOverflowSync({ k: ['three'] }, { home, logger }),
    ];
    for (const report of reports) {
      expect(report.written).toEqual([]);
      expect(report.failed.map((f) => [f.code, f.path])).toEqual([['EPROFILE_MISSING', home]]);
    }
    expect(names(path.join(root, 'profiles'))).toEqual([]);
    expect(logger.lines.filter((l) => l.level === 'error')).toHaveLength(3);
    expect(logger.lines[0]?.fields).toMatchObject({ code: 'EPROFILE_MISSING', path: home });
  });

  it('non-serialisable messages fail alone: ESERIALIZE for each, the others written, no temp file left', async () => {
    const home = path.join(tempDir(), 'home');
    const circular: Record<string, unknown> = { text: 'loop' };
    circular.self = circular;
    const report = await flushPending(
      {
        good: 'fine',
        bigint: { text: 'big', n: 10n },
        circular,
        nan: { text: 'nan', score: Number.NaN },
        map: { text: 'map', extra: new Map([['a', 1]]) },
        fn: { text: 'fn', callback: () => 1 },
        alsoGood: { text: 'also fine', when: new Date(0) },
      },
      { home, logger: memoryLogger() },
    );
    expect(report.written.map((w) => w.sessionKey)).toEqual(['good', 'alsoGood']);
    expect(report.failed.map((f) => [f.sessionKey, f.code, f.message.split(': ').slice(1).join(': ').split(' [')[0]])).toEqual([
      ['bigint', 'ESERIALIZE', 'BigInt at $.data.n'],
      // data is a shallow copy of the event: the cycle shows one level down.
      ['circular', 'ESERIALIZE', 'circular reference at $.data.self.self'],
      ['nan', 'ESERIALIZE', 'non-finite number NaN at $.data.score'],
      ['map', 'ESERIALIZE', 'Map at $.data.extra (not a plain object)'],
      ['fn', 'ESERIALIZE', 'function at $.data.callback'],
    ]);
    for (const f of report.failed) expect(fs.existsSync(f.target)).toBe(false);
    const files = names(spoolDir(home));
    expect(files).toHaveLength(2);
    expect(files.filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('the spool path blocked by a file: ENOTDIR reported, nothing written', () => {
    const home = path.join(tempDir(), 'home');
    fs.mkdirSync(home);
    fs.writeFileSync(path.join(home, 'pending_messages'), 'not a directory');
    const report = flushPendingSync({ k: 'x' }, { home, logger: memoryLogger() });
    expect(report.failed.map((f) => [f.code, f.path])).toEqual([['ENOTDIR', path.join(home, 'pending_messages')]]);
    expect(names(home)).toEqual(['pending_messages']);
  });

  it('a throwing logger does not turn the report into an exception', async () => {
    const home = path.join(tempDir(), 'home');
    const angry: GatewayLogger = {
      debug() {
        throw new Error('logger down');
      },
      info() {
        throw new Error('logger down');
      },
      warn() {
        throw new Error('logger down');
      },
      error() {
        throw new Error('logger down');
      },
    };
    const report = await flushPending({ ok: 'x', bad: { text: 'y', n: 1n } }, {
      home,
      logger: angry,
    });
    expect(report.written.map((w) => w.sessionKey)).toEqual(['ok']);
    expect(report.failed.map((f) => f.code)).toEqual(['ESERIALIZE']);
  });
});
