import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { modeOf, tempRoot } from '@hermes/test-utils';
import {
  atomicWriteSync,
  ensureHermesHomeSync,
  loadEnvironment,
  privateAppendSync,
  secureMkdirSync,
  setLogger,
  silentLogger,
} from '../src/index.js';
import { caught, tempEnv } from './helpers.js';

setLogger(silentLogger);

describe('symlinks', () => {
  it('a link to a file inside the root is written through and survives', () => {
    const env = tempEnv();
    const real = path.join(env.home, 'sessions', 'real.json');
    fs.mkdirSync(path.dirname(real), { recursive: true });
    fs.writeFileSync(real, 'old', { mode: 0o644 });
    const link = path.join(env.home, 'current.json');
    fs.symlinkSync('sessions/real.json', link);
    const r = atomicWriteSync(link, 'new', { kind: 'sessions', env });
    expect(r.path).toBe(real);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.readlinkSync(link)).toBe('sessions/real.json');
    expect(fs.readFileSync(link, 'utf8')).toBe('new');
    expect(modeOf(real)).toBe('0644');
  });

  it('a directory link replaced between the open that met it and its readlink: the walk looks again, no EINVAL', async () => {
    const env = tempEnv();
    fs.mkdirSync(path.join(env.home, 'real-logs'), { mode: 0o700 });
    const link = path.join(env.home, 'logs');
    fs.symlinkSync('real-logs', link);
    const { setFaultHook } = await import('../src/internal/io.js');
    const seen: string[] = [];
    setFaultHook((req) => {
      if (req.op === 'readlink' && req.path === link) {
        seen.push(req.path);
        // What a group member's swap loop does at this moment: the link becomes a real directory.
        if (seen.length === 1) {
          fs.unlinkSync(link);
          fs.mkdirSync(link, { mode: 0o700 });
        }
      }
      return undefined;
    });
    try {
      privateAppendSync(path.join(link, 'a.log'), 'line\n', { kind: 'logs', env });
    } finally {
      setFaultHook(undefined);
    }
    expect(seen).toEqual([link]);
    expect(fs.lstatSync(link).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(link, 'a.log'), 'utf8')).toBe('line\n');
    expect(fs.readdirSync(path.join(env.home, 'real-logs'))).toEqual([]);
  });

  it('a link leaving the root is refused and its target untouched', () => {
    const env = tempEnv();
    const outside = path.join(tempRoot(), 'victim.txt');
    fs.writeFileSync(outside, 'precious');
    const link = path.join(env.home, 'evil.json');
    fs.symlinkSync(outside, link);
    const e = caught(() => atomicWriteSync(link, 'pwned', { kind: 'sessions', env }));
    expect(e.code).toBe('ESYMLINK_ESCAPE');
    expect(e.path).toBe(link);
    expect(fs.readFileSync(outside, 'utf8')).toBe('precious');
    expect(fs.readdirSync(path.dirname(outside))).toEqual(['victim.txt']);
  });

  it('a directory link below the root that leaves it is refused for writes and mkdir', () => {
    const env = tempEnv();
    const outsideDir = tempRoot();
    fs.symlinkSync(outsideDir, path.join(env.home, 'pending_messages'));
    const e = caught(() => atomicWriteSync(path.join(env.home, 'pending_messages', 'p.json'), 'x', { kind: 'pending-messages', env }));
    expect(e.code).toBe('ESYMLINK_ESCAPE');
    expect(fs.readdirSync(outsideDir)).toEqual([]);
  });

  it('append through a directory link that leaves the root is refused, even when the file exists there', () => {
    const env = tempEnv();
    const outsideDir = tempRoot();
    fs.writeFileSync(path.join(outsideDir, 's.jsonl'), 'outside\n');
    fs.symlinkSync(outsideDir, path.join(env.home, 'moa-traces'));
    const e = caught(() => privateAppendSync(path.join(env.home, 'moa-traces', 's.jsonl'), 'x\n', { kind: 'moa-traces', env }));
    expect(e.code).toBe('ESYMLINK_ESCAPE');
    expect(fs.readFileSync(path.join(outsideDir, 's.jsonl'), 'utf8')).toBe('outside\n');
  });

  it('append to a symlink is refused with a clear error', () => {
    const env = tempEnv();
    const real = path.join(env.home, 'trajectories', 'real.jsonl');
    fs.mkdirSync(path.dirname(real), { recursive: true });
    fs.writeFileSync(real, 'line\n');
    const link = path.join(env.home, 'trajectories', 'link.jsonl');
    fs.symlinkSync(real, link);
    const e = caught(() => privateAppendSync(link, 'x\n', { kind: 'trajectories', env }));
    expect(e.code).toBe('ESYMLINK');
    expect(e.message).toContain('symbolic link');
    expect(fs.readFileSync(real, 'utf8')).toBe('line\n');
    const dangling = path.join(env.home, 'trajectories', 'dangling.jsonl');
    fs.symlinkSync(path.join(env.home, 'nowhere.jsonl'), dangling);
    expect(caught(() => privateAppendSync(dangling, 'x\n', { kind: 'trajectories', env })).code).toBe('ESYMLINK');
    expect(fs.existsSync(path.join(env.home, 'nowhere.jsonl'))).toBe(false);
  });

  it('a dangling link in the home chain gives a diagnostic and its target is not created', () => {
    const root = tempRoot();
    const mount = path.join(root, 'mnt', 'disk', 'hermes');
    const home = path.join(root, 'home-link');
    fs.symlinkSync(mount, home);
    const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false' } });
    const e = caught(() => ensureHermesHomeSync({ env }));
    expect(e.code).toBe('EDANGLING_LINK');
    expect(e.message).toContain(`Directory link is unavailable: ${home} -> ${mount}`);
    expect(e.hint).toContain('restore the mount');
    expect(fs.existsSync(path.join(root, 'mnt'))).toBe(false);

    const env2 = tempEnv();
    fs.symlinkSync(path.join(root, 'gone'), path.join(env2.home, 'logs'));
    const e2 = caught(() => secureMkdirSync(path.join(env2.home, 'logs', 'curator'), 'logs', { env: env2 }));
    expect(e2.code).toBe('EDANGLING_LINK');
    expect(fs.existsSync(path.join(root, 'gone'))).toBe(false);
  });

  it('a link above the root is the operator\'s and is followed', () => {
    const root = tempRoot();
    fs.mkdirSync(path.join(root, 'real'));
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'alias'));
    const env = loadEnvironment({ home: path.join(root, 'alias', 'home'), env: { HERMES_MANAGED: 'false' } });
    const r = ensureHermesHomeSync({ env });
    expect(r.created[0]).toBe(path.join(root, 'alias', 'home'));
    expect(modeOf(path.join(root, 'real', 'home'))).toBe('0700');
    expect(modeOf(path.join(root, 'real', 'home', 'logs'))).toBe('0700');
  });
});
