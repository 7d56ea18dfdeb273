import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { modeOf, tempRoot } from '@hermes/test-utils';
import {
  atomicWriteSync,
  ensureFileSync,
  fsyncDirectory,
  fsyncDirectorySync,
  secureMkdirSync,
  ensureHermesHome,
  ensureHermesHomeSync,
  loadEnvironment,
  reconcileDir,
  reconcileDirSync,
  reconcileFile,
  reconcileFileSync,
  setLogger,
  silentLogger,
} from '../src/index.js';

setLogger(silentLogger);

const SUBDIRS = ['audio_cache', 'cron', 'hooks', 'image_cache', 'logs', 'memories', 'pairing', 'sessions', 'skills'];

describe('ensureHermesHome', () => {
  it('unmanaged: creates the home and standard subdirs 0700 and tightens an existing 0755 home', async () => {
    const home = path.join(tempRoot(), 'h');
    fs.mkdirSync(home, { mode: 0o755 });
    fs.chmodSync(home, 0o755);
    const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false' } });
    const r = await ensureHermesHome({ env });
    expect(r.managed).toBe(false);
    expect(r.created.map((p) => path.basename(p)).sort()).toEqual(SUBDIRS);
    expect(r.reconciled).toHaveLength(1);
    expect(r.reconciled[0]).toMatchObject({ path: home, action: 'changed', before: 0o755, after: 0o700 });
    expect(modeOf(home)).toBe('0700');
    for (const d of SUBDIRS) expect(modeOf(path.join(home, d)), d).toBe('0700');
  });

  it('unmanaged with HERMES_HOME_MODE=0701: home-mode kinds get 0701', () => {
    const home = path.join(tempRoot(), 'h');
    const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false', HERMES_HOME_MODE: '0701' } });
    ensureHermesHomeSync({ env });
    expect(modeOf(home)).toBe('0701');
    expect(modeOf(path.join(home, 'sessions'))).toBe('0701');
  });

  it('managed: required subdirs must pre-exist and nothing is chmodded', () => {
    const home = path.join(tempRoot(), 'h');
    fs.mkdirSync(home);
    fs.chmodSync(home, 0o2770);
    const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'nixos' }, umask: 0o007 });
    expect(() => ensureHermesHomeSync({ env })).toThrow(expect.objectContaining({ code: 'EMANAGED_MISSING', path: path.join(home, 'cron') }) as Error);
    for (const d of ['cron', 'sessions', 'logs', 'memories']) {
      fs.mkdirSync(path.join(home, d));
      fs.chmodSync(path.join(home, d), d === 'logs' ? 0o700 : 0o2770);
    }
    const r = ensureHermesHomeSync({ env });
    expect(r.managed).toBe(true);
    expect(r.reconciled).toEqual([]);
    expect(modeOf(path.join(home, 'logs'))).toBe('0700'); // a legacy 0700 is the operator's to repair
    expect(fs.existsSync(path.join(home, 'pairing'))).toBe(false);
    expect(fs.statSync(path.join(home, 'logs', 'curator')).isDirectory()).toBe(true);
  });

  it('never resurrects a deleted named profile', () => {
    const root = tempRoot();
    const env = loadEnvironment({ home: root, profile: 'work', env: { HERMES_MANAGED: 'false' } });
    expect(() => ensureHermesHomeSync({ env })).toThrow(expect.objectContaining({ code: 'EPROFILE_MISSING' }) as Error);
    expect(fs.existsSync(path.join(root, 'profiles'))).toBe(false);
  });
});

describe('the home is never invented where its absence means something', () => {
  it('a missing named profile is not recreated by any primitive', () => {
    const root = tempRoot();
    fs.mkdirSync(path.join(root, 'profiles'));
    const env = loadEnvironment({ home: root, profile: 'gone', env: { HERMES_MANAGED: 'false' } });
    for (const write of [
      () => secureMkdirSync(path.join(env.home, 'pending_messages'), 'pending-messages', { env }),
      () => atomicWriteSync(path.join(env.home, 'sessions', 'saved', 'x.json'), 'x', { kind: 'saved-sessions', env }),
      () => ensureFileSync(path.join(env.home, 'state.db'), { kind: 'state-db', env }),
    ]) {
      expect(write).toThrow(expect.objectContaining({ code: 'EPROFILE_MISSING', path: env.home }) as Error);
    }
    expect(fs.readdirSync(path.join(root, 'profiles'))).toEqual([]);
  });

  it('a missing managed home is not invented; its missing subdirectories may be created', () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'nixos' }, umask: 0o007 });
    expect(() => secureMkdirSync(path.join(home, 'moa-traces'), 'moa-traces', { env })).toThrow(
      expect.objectContaining({ code: 'EMANAGED_MISSING' }) as Error,
    );
    expect(fs.existsSync(home)).toBe(false);
    fs.mkdirSync(home);
    fs.chmodSync(home, 0o2770);
    expect(secureMkdirSync(path.join(home, 'moa-traces'), 'moa-traces', { env }).created).toEqual([path.join(home, 'moa-traces')]);
  });

  it('fsyncDirectory syncs a directory and reports a missing one', async () => {
    const root = tempRoot();
    fsyncDirectorySync(root);
    await fsyncDirectory(root);
    expect(() => { fsyncDirectorySync(path.join(root, 'nope')); }).toThrow(expect.objectContaining({ code: 'ENOENT', step: 'fsync-dir' }) as Error);
  });
});

describe('reconcileDir', () => {
  it('runtime never touches a managed directory; the operator widens a legacy 0700 to 2770', async () => {
    const dir = path.join(tempRoot(), 'logs');
    fs.mkdirSync(dir, { mode: 0o700 });
    const env = loadEnvironment({ home: path.dirname(dir), env: { HERMES_MANAGED: 'nixos' }, umask: 0o007 });
    expect(reconcileDirSync(dir, 'logs', { env })).toMatchObject({ action: 'none', expected: null });
    expect(modeOf(dir)).toBe('0700');
    expect(await reconcileDir(dir, 'logs', { env, operator: true, dryRun: true })).toMatchObject({ action: 'would-change', expected: 0o2770 });
    expect(modeOf(dir)).toBe('0700');
    expect(reconcileDirSync(dir, 'logs', { env, operator: true })).toMatchObject({ action: 'changed', before: 0o700, after: 0o2770 });
    expect(modeOf(dir)).toBe('2770');
  });

  it('leaves links alone and reports it', () => {
    const root = tempRoot();
    fs.mkdirSync(path.join(root, 'target'), { mode: 0o755 });
    fs.symlinkSync(path.join(root, 'target'), path.join(root, 'logs'));
    const env = loadEnvironment({ home: root, env: { HERMES_MANAGED: 'false' } });
    const r = reconcileDirSync(path.join(root, 'logs'), 'logs', { env });
    expect(r.action).toBe('left');
    expect(r.warnings[0]).toContain('symbolic link');
    expect(modeOf(path.join(root, 'target'))).toBe('0755');
  });
});

describe('ensureFile', () => {
  it('creates with the kind mode exactly and leaves an existing file alone', () => {
    const root = tempRoot();
    const env = loadEnvironment({ home: root, env: { HERMES_MANAGED: 'nixos' }, umask: 0o007 });
    const r = ensureFileSync(path.join(root, 'state.db'), { kind: 'state-db', env });
    expect(r).toMatchObject({ created: true, mode: 0o660 });
    expect(modeOf(path.join(root, 'state.db'))).toBe('0660');
    fs.chmodSync(path.join(root, 'state.db'), 0o640);
    expect(ensureFileSync(path.join(root, 'state.db'), { kind: 'state-db', env })).toMatchObject({ created: false, mode: 0o640 });
    const env2 = loadEnvironment({ home: root, env: { HERMES_MANAGED: 'false' } });
    ensureFileSync(path.join(root, 'other.db'), { kind: 'state-db', env: env2 });
    expect(modeOf(path.join(root, 'other.db'))).toBe('0600');
  });
});

describe('reconcileFile (the operator repairs a loose file)', () => {
  it('unmanaged: removes every group/other bit, never the owner\'s; dry run changes nothing', async () => {
    const root = tempRoot();
    const env = loadEnvironment({ home: root, env: { HERMES_MANAGED: 'false' } });
    const f = path.join(root, '.env');
    fs.writeFileSync(f, 'KEY=1\n');
    fs.chmodSync(f, 0o664);
    expect(reconcileFileSync(f, 'secrets', { env, dryRun: true })).toMatchObject({ action: 'would-change', before: 0o664, expected: 0o600 });
    expect(modeOf(f)).toBe('0664');
    expect(await reconcileFile(f, 'secrets', { env })).toMatchObject({ action: 'changed', before: 0o664, after: 0o600 });
    expect(modeOf(f)).toBe('0600');
    fs.chmodSync(f, 0o400);
    expect(reconcileFileSync(f, 'secrets', { env })).toMatchObject({ action: 'none', before: 0o400 });
    expect(modeOf(f)).toBe('0400');
  });

  it('managed: group rw is allowed, others are removed', () => {
    const root = tempRoot();
    const env = loadEnvironment({ home: root, env: { HERMES_MANAGED: 'nixos' }, umask: 0o007 });
    const f = path.join(root, 'state.db');
    fs.writeFileSync(f, '');
    fs.chmodSync(f, 0o666);
    expect(reconcileFileSync(f, 'state-db', { env })).toMatchObject({ action: 'changed', after: 0o660 });
    expect(modeOf(f)).toBe('0660');
  });

  it('leaves links alone', () => {
    const root = tempRoot();
    const env = loadEnvironment({ home: root, env: { HERMES_MANAGED: 'false' } });
    fs.writeFileSync(path.join(root, 'real'), '');
    fs.chmodSync(path.join(root, 'real'), 0o644);
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'auth.json'));
    expect(reconcileFileSync(path.join(root, 'auth.json'), 'secrets', { env }).action).toBe('left');
    expect(modeOf(path.join(root, 'real'))).toBe('0644');
  });
});
