import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnNode } from '@hermes/test-utils';
import { anchorInfo, atomicWriteSync, sweepTempFilesSync, parseTempName } from '../src/index.js';
import { fixture, tempEnv } from './helpers.js';

const OLD = JSON.stringify({ version: 'old', pad: 'o'.repeat(50_000) });
const NEW = JSON.stringify({ version: 'new', pad: 'n'.repeat(80_000) });

/** Starts the pausing child and resolves once it reports that it is blocked at `step`. */
function pausedChild(target: string, step: string): Promise<{ kill: () => Promise<void>; line: string }> {
  const child = spawnNode(fixture('pause-at.mjs'), [target, step, NEW]);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('PAUSED') || l === 'DONE');
      if (line === undefined) return;
      if (line === 'DONE') reject(new Error(`child never reached step ${step}`));
      resolve({
        line,
        kill: () =>
          new Promise((done) => {
            child.on('exit', () => {
              done();
            });
            child.kill('SIGKILL');
          }),
      });
    });
    child.on('exit', (code) => {
      reject(new Error(`child exited ${String(code)} before pausing: ${err}`));
    });
  });
}

// Killed while paused at each step, the target is entirely old or entirely new, never torn; the sweep
// then finds whatever the dead writer left behind. With the native layer the temp has no name (O_TMPFILE) until
// it is complete and fsynced: killed before that link, the writer leaves nothing at all.
const UNNAMED = anchorInfo().mode === 'native';
const CASES: { step: string; expect: 'old' | 'new'; orphans: ('tmp' | 'bak')[] }[] = [
  { step: 'open', expect: 'old', orphans: [] },
  { step: 'write', expect: 'old', orphans: UNNAMED ? [] : ['tmp'] },
  { step: 'fchmod', expect: 'old', orphans: UNNAMED ? [] : ['tmp'] },
  { step: 'fsync', expect: 'old', orphans: UNNAMED ? [] : ['tmp'] },
  { step: 'close', expect: 'old', orphans: ['tmp'] },
  // The first link: the unnamed file's (before it has a name), or the rollback link (the named temp exists).
  { step: 'link', expect: 'old', orphans: UNNAMED ? [] : ['tmp'] },
  { step: 'rename', expect: 'old', orphans: ['bak', 'tmp'] },
  { step: 'fsync-dir', expect: 'new', orphans: ['bak'] },
];

describe('crash safety: SIGKILL at each step', () => {
  for (const c of CASES) {
    it(`killed at ${c.step}: target is entirely ${c.expect}`, async () => {
      const env = tempEnv();
      const dir = path.join(env.home, 'pending_messages');
      fs.mkdirSync(dir, { mode: 0o700 });
      const target = path.join(dir, 'pending-x.json');
      fs.writeFileSync(target, OLD, { mode: 0o600 });
      const child = await pausedChild(target, c.step);
      expect(child.line.startsWith(`PAUSED ${c.step}`)).toBe(true);
      await child.kill();
      const content = fs.readFileSync(target, 'utf8');
      expect(content === OLD || content === NEW).toBe(true);
      expect(content).toBe(c.expect === 'old' ? OLD : NEW);
      const sweep = sweepTempFilesSync(env.home);
      const orphans = sweep.found
        .map((t) => ({ type: t.type, target: t.target, stale: t.stale, pidAlive: t.pidAlive }))
        .sort((a, b) => a.type.localeCompare(b.type));
      expect(orphans).toEqual(c.orphans.map((type) => ({ type, target, stale: true, pidAlive: false })));
      const removed = sweepTempFilesSync(env.home, { remove: true });
      expect(removed.removed).toHaveLength(c.orphans.length);
      expect(fs.readdirSync(dir)).toEqual(['pending-x.json']);
    });
  }
});

describe('temp sweep', () => {
  it('matches only this package\'s names, and judges stale by pid (own namespace only) and age', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'sessions');
    fs.mkdirSync(dir);
    const ns = fs.readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, '$1');
    const live = `.a.json.${String(process.pid)}-${ns}.0123456789ab.tmp`;
    const old = `.b.json.${String(process.pid)}-${ns}.0123456789ab.tmp`;
    const dead = `.c.json.4194303-${ns}.0123456789ab.tmp`;
    const otherNs = `.d.json.4194303-1.0123456789ab.tmp`; // a writer in another pid namespace: its pid says nothing here
    const noNs = `.e.json.4194303.0123456789ab.tmp`; // written without a namespace: the pid cannot be trusted either
    const newline = `.f\njson.4194303-${ns}.0123456789ab.tmp`;
    for (const n of [live, old, dead, otherNs, noNs, newline]) fs.writeFileSync(path.join(dir, n), '');
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(path.join(dir, old), twoHoursAgo, twoHoursAgo);
    for (const other of ['.a.json.tmp', 'a.json.123.0123456789ab.tmp', '.env_abcd.tmp', '.x.1.zzzzzzzzzzzz.tmp']) {
      fs.writeFileSync(path.join(dir, other), '');
    }
    const r = sweepTempFilesSync(env.home);
    expect(r.found.map((t) => [path.basename(t.path), t.pidAlive, t.stale])).toEqual([
      [live, true, false],
      [old, false, true], // written before this process started: its pid is not the writer's (recycled)
      [dead, false, true],
      [otherNs, null, false],
      [noNs, null, false],
      [newline, false, true],
    ]);
    expect(parseTempName('.state.db.42.00ff00ff00ff.bak')).toEqual({ target: 'state.db', pid: 42, type: 'bak' });
    expect(parseTempName('.state.db.42-4026531836.00ff00ff00ff.tmp')).toEqual({ target: 'state.db', pid: 42, pidns: '4026531836', type: 'tmp' });
    expect(parseTempName('.env_abcd.tmp')).toBeNull();
    const removed = sweepTempFilesSync(env.home, { remove: true });
    expect(removed.removed.map((p) => path.basename(p)).sort()).toEqual([old, dead, newline].sort());
  });

  it('an excluded directory is never descended into (the spool: its temps are salvaged, not swept)', () => {
    const env = tempEnv();
    const spool = path.join(env.home, 'pending_messages');
    const other = path.join(env.home, 'sessions');
    fs.mkdirSync(spool);
    fs.mkdirSync(other);
    const dead = `.p.json.4194303-${fs.readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, '$1')}.0123456789ab.tmp`;
    fs.writeFileSync(path.join(spool, dead), '{"complete":true}');
    fs.writeFileSync(path.join(other, dead), 'x');
    const r = sweepTempFilesSync(env.home, { remove: true, exclude: [spool] });
    expect(r.removed).toEqual([path.join(other, dead)]);
    expect(fs.readdirSync(spool)).toEqual([dead]);
  });

  it('temp names fit NAME_MAX for any target name up to 255 bytes', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'sessions');
    for (const name of ['a'.repeat(255), 'é'.repeat(127), `${'x'.repeat(250)}.json`]) {
      const f = path.join(dir, name);
      atomicWriteSync(f, 'x', { kind: 'sessions', env });
      expect(fs.readFileSync(f, 'utf8')).toBe('x');
    }
    expect(fs.readdirSync(dir)).toHaveLength(3);
  });
});
