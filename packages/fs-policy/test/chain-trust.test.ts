/**
 * Issue row 3: as root, the path to the home is trusted only when every directory on it belongs to root or to
 * the home's owner. HERMES_UID (the uid created files are given to) vouches for nothing on the way, nor does
 * the owner of an explicit `root` or of a target outside the home. The operator is a real second uid and makes
 * its link itself; root's calls run in this (root) process.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, tempRoot, tree, type TestUsers } from '@hermes/test-utils';
import { atomicWriteSync, checkHomeChainSync, ensureHermesHomeSync, loadEnvironment, reconcileDirSync, secureMkdirSync, setLogger, silentLogger, type FsPolicyError } from '../src/index.js';
import { caught } from './helpers.js';

const mode = (p: string): string => (fs.lstatSync(p).mode & 0o7777).toString(8).padStart(4, '0');

describeNeeds(['root', 'linux', 'useradd'], 'row 3: root trusts only root and the home\'s owner on the path to the home', () => {
  let users: TestUsers;
  let operator: { uid: number; gid: number };
  let other: { uid: number; gid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    operator = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    other = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    setLogger(silentLogger);
  });
  afterAll(() => {
    setLogger(undefined);
    users.cleanup();
  });

  /** Runs a command as the operator (its own uid, its own process); it must succeed. */
  function asOperator(cmd: string, args: readonly string[]): void {
    const r = spawnSync(cmd, args, { uid: operator.uid, gid: operator.gid, encoding: 'utf8', timeout: 10_000 });
    expect([cmd, r.status, r.stderr]).toEqual([cmd, 0, '']);
  }

  /** A root-owned 0755 case directory holding the operator's own 0755 directory and a root-owned 0755 target. */
  function layout(): { base: string; opDir: string; target: string; home: string } {
    const base = path.join(tempRoot(), 'case');
    fs.mkdirSync(base, { mode: 0o755 });
    const opDir = path.join(base, 'op');
    fs.mkdirSync(opDir, { mode: 0o755 });
    fs.chownSync(opDir, operator.uid, operator.gid);
    const target = path.join(base, 'target');
    fs.mkdirSync(target, { mode: 0o755 });
    fs.chmodSync(target, 0o755);
    return { base, opDir, target, home: path.join(opDir, 'home') };
  }

  const rootEnv = (home: string, ids: boolean) =>
    loadEnvironment({
      env: { HERMES_HOME: home, HERMES_MANAGED: 'false', ...(ids ? { HERMES_UID: String(operator.uid), HERMES_GID: String(operator.gid) } : {}) },
    });

  it('row 3: the operator (HERMES_UID) links the home to a root-owned directory: ensureHermesHome, a write, mkdir and the repair are refused (EUNSAFE_PATH); the target keeps 0755, 0 dirs created', () => {
    const l = layout();
    asOperator('ln', ['-s', l.target, l.home]);
    expect(fs.lstatSync(l.home).uid).toBe(operator.uid);
    const env = rootEnv(l.home, true);

    const errors: FsPolicyError[] = [
      caught(() => ensureHermesHomeSync({ env })),
      caught(() => atomicWriteSync(path.join(l.home, 'pending_messages', 'p.json'), 'x', { kind: 'pending-messages', env })),
      caught(() => secureMkdirSync(path.join(l.home, 'sessions'), 'sessions', { env })),
      caught(() => reconcileDirSync(l.home, 'home', { env, operator: true })),
      caught(() => checkHomeChainSync(l.home, { uid: operator.uid })),
    ];
    expect(errors.map((e) => [e.code, e.path])).toEqual(Array.from({ length: 5 }, () => ['EUNSAFE_PATH', l.opDir]));
    expect(errors[0]?.detail).toBe(
      `refusing to act on ${l.home} as root: ${l.opDir} is owned by uid ${String(operator.uid)} (only root and the home's owner (uid 0) are trusted), so another uid could redirect the path`,
    );
    const created = tree(l.target);
    console.log(`row 3: operator-linked home: ${String(errors.filter((e) => e.code === 'EUNSAFE_PATH').length)} of 5 root operations refused (EUNSAFE_PATH); target mode ${mode(l.target)}, ${String(created.length)} entries created in it`);
    expect(mode(l.target)).toBe('0755');
    expect(created).toEqual([]);
  });

  it('row 3: a safe home verified (and remembered) once is checked again after the operator relinks it', () => {
    const l = layout();
    asOperator('mkdir', ['-m', '0700', l.home]);
    const env = rootEnv(l.home, true);
    // The operator's own home in the operator's own directory: its owner is trusted, the write goes through.
    atomicWriteSync(path.join(l.home, 'a.json'), 'first', { kind: 'pending-messages', env, createParents: true });
    expect(fs.readFileSync(path.join(l.home, 'a.json'), 'utf8')).toBe('first');
    // The operator swaps its home for a link to the root-owned directory: the cached verdict must not carry over.
    asOperator('mv', [l.home, `${l.home}.old`]);
    asOperator('ln', ['-s', l.target, l.home]);
    const e = caught(() => atomicWriteSync(path.join(l.home, 'a.json'), 'second', { kind: 'pending-messages', env }));
    const again = caught(() => ensureHermesHomeSync({ env }));
    expect([e.code, e.path, again.code, again.path]).toEqual(['EUNSAFE_PATH', l.opDir, 'EUNSAFE_PATH', l.opDir]);
    expect([mode(l.target), tree(l.target)]).toEqual(['0755', []]);
    // And back: the real home is trusted again.
    asOperator('rm', [l.home]);
    asOperator('mv', [`${l.home}.old`, l.home]);
    atomicWriteSync(path.join(l.home, 'a.json'), 'third', { kind: 'pending-messages', env });
    expect(fs.readFileSync(path.join(l.home, 'a.json'), 'utf8')).toBe('third');
    console.log(`row 3: cached chain: safe home written, relinked home refused (${e.code}), restored home written; target ${mode(l.target)} with ${String(tree(l.target).length)} entries`);
  });

  it('row 3: an explicit root, or a target outside the home, owned by another uid is not trusted; one owned by the home\'s owner or root is', () => {
    const base = path.join(tempRoot(), 'case');
    fs.mkdirSync(base, { mode: 0o755 });
    const home = path.join(base, 'home');
    fs.mkdirSync(home, { mode: 0o700 });
    fs.chownSync(home, operator.uid, operator.gid); // the home's owner
    const env = loadEnvironment({ env: { HERMES_HOME: home, HERMES_MANAGED: 'false' } });
    const dirOf = (name: string, owner: number): string => {
      const d = path.join(base, name);
      fs.mkdirSync(d, { mode: 0o755 });
      fs.chownSync(d, owner, owner === 0 ? 0 : users.gid);
      const sub = path.join(d, 'saved');
      fs.mkdirSync(sub, { mode: 0o755 });
      fs.chownSync(sub, owner, owner === 0 ? 0 : users.gid);
      return sub;
    };
    const foreign = dirOf('foreign', other.uid);
    const asRootOption = caught(() => atomicWriteSync(path.join(foreign, 'out.md'), 'transcript', { kind: 'saved-sessions', env, root: foreign }));
    const asOutside = caught(() => atomicWriteSync(path.join(foreign, 'out2.md'), 'transcript', { kind: 'saved-sessions', env }));
    expect([asRootOption.code, asRootOption.path, asOutside.code, asOutside.path]).toEqual(['EUNSAFE_PATH', path.dirname(foreign), 'EUNSAFE_PATH', path.dirname(foreign)]);
    expect(asRootOption.detail).toContain(`is owned by uid ${String(other.uid)} (only root and the home's owner (uid ${String(operator.uid)}) are trusted, not the owner of ${foreign})`);
    expect(tree(path.dirname(foreign))).toEqual(['saved']);

    const owners = dirOf('owners', operator.uid);
    const rootOwned = dirOf('rooted', 0);
    atomicWriteSync(path.join(owners, 'out.md'), 'transcript', { kind: 'saved-sessions', env, root: owners });
    atomicWriteSync(path.join(rootOwned, 'out.md'), 'transcript', { kind: 'saved-sessions', env, root: rootOwned });
    expect([fs.readFileSync(path.join(owners, 'out.md'), 'utf8'), fs.readFileSync(path.join(rootOwned, 'out.md'), 'utf8')]).toEqual(['transcript', 'transcript']);
    console.log(`row 3: explicit root / outside target owned by another uid: 2 of 2 refused (EUNSAFE_PATH), 0 files written; owned by the home's owner or root: 2 of 2 written`);
  });

  it('row 3: a home that does not exist yet has no owner to trust: root creating it in the operator\'s directory is refused, nothing created', () => {
    const l = layout();
    const env = rootEnv(l.home, true);
    const e = caught(() => ensureHermesHomeSync({ env }));
    expect([e.code, e.path]).toEqual(['EUNSAFE_PATH', l.opDir]);
    expect(e.detail).toContain('(the home does not exist yet, so only root is trusted on the way to it)');
    expect(tree(l.opDir)).toEqual([]);
    // Created by its owner first, it is then the operator's home and root may act on it.
    asOperator('mkdir', ['-m', '0700', l.home]);
    const r = ensureHermesHomeSync({ env });
    expect(r.created.length).toBeGreaterThan(0);
    expect(fs.statSync(path.join(l.home, 'sessions')).uid).toBe(operator.uid);
    console.log(`row 3: missing home under the operator's directory: refused (${e.code}), 0 entries created; after the operator created it: ${String(r.created.length)} dirs created as root, owned by HERMES_UID`);
  });
});
