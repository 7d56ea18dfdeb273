/**
 * Issue row 2: without usable descriptors the package fails closed. The anchor probe no longer depends on
 * TMPDIR; with /proc masked in a mount namespace (and TMPDIR=/nonexistent) every operation of a privileged
 * actor, and every write into a shared home, is refused with EUNSAFE_FALLBACK before anything is opened —
 * while a single user in an unshared home keeps working, and the explicit opt-in (option AND variable) is the
 * only way past. The attacks of attacks.test.ts are replayed in that mode: a real second uid in its own
 * process, swapping in a tight loop, against 2,000 operations each.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ATTACKER, createTestUsers, describeNeeds, lastJson, runAs, runMasked, tempRoot, tree, type Proc, type TestUsers } from '@hermes/test-utils';
import { fixture } from './helpers.js';

const ITERATIONS = 2000;
const MASKED_REASON = 'procfs is not mounted here, or is masked: /proc/self/fd does not exist [ENOENT]';
const WRITES = ['write', 'append', 'mkdir', 'ensure-home', 'ensure-file', 'reconcile', 'hold'] as const;
const READS = ['scan', 'hold-read'] as const;
const EVERY = [...WRITES, ...READS, 'sweep'] as const;

interface OpsReport {
  resolver: string;
  reason: string | null;
  allow: boolean;
  results: Record<string, string>;
  messages: Record<string, string>;
  logged: string[];
}

interface LoopReport {
  ok: number;
  codes: Record<string, number>;
  iterations: number;
}

interface As {
  uid: number;
  gid: number;
}


describeNeeds(['root', 'linux', 'useradd', 'mount', 'unshare'], 'row 2: fail closed without descriptors (TMPDIR unusable, /proc masked)', () => {
  let users: TestUsers;
  let mnt: string;
  let service: As;
  let attacker: As;
  const root: As = { uid: 0, gid: 0 };
  let n = 0;

  beforeAll(() => {
    users = createTestUsers(2);
    service = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    attacker = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    mnt = path.join(tempRoot(), 'fs');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m,mode=0755', 'tmpfs', mnt]);
  });
  afterAll(() => {
    spawnSync('umount', ['-l', mnt]);
    users.cleanup();
  });

  /** A fresh case directory (0755, root) with a home owned by `owner` at `mode`, and the attacker's own directory. */
  function layout(owner: As, mode: number): { base: string; home: string; outside: string; stop: string } {
    const base = path.join(mnt, `case-${String(n++)}`);
    fs.mkdirSync(base, { mode: 0o755 });
    const home = path.join(base, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, owner.uid, owner.gid);
    fs.chmodSync(home, mode);
    const outside = path.join(base, 'outside');
    fs.mkdirSync(outside);
    fs.chownSync(outside, attacker.uid, users.gid);
    fs.chmodSync(outside, 0o777);
    return { base, home, outside, stop: path.join(base, 'stop') };
  }

  function shareDir(dir: string): void {
    fs.mkdirSync(dir);
    fs.chownSync(dir, service.uid, users.gid);
    fs.chmodSync(dir, 0o2770);
  }

  async function ops(home: string, as: As, env: Record<string, string>, names: readonly string[], allow = false): Promise<OpsReport> {
    const r = await runMasked(fixture('fallback-ops.mjs'), [home, allow ? '1' : '0', ...names], as, { HERMES_HOME: home, ...env }, 30_000);
    return lastJson<OpsReport>(r);
  }

  const all = (names: readonly string[], code: string): Record<string, string> => Object.fromEntries(names.map((op) => [op, code]));

  it('row 2: an unusable TMPDIR (missing, unreadable) no longer forces fallback: anchorMode() is procfd', async () => {
    const unreadable = path.join(mnt, 'unreadable-tmp');
    fs.mkdirSync(unreadable, { mode: 0o700 }); // root's: the service cannot even search it
    const home = path.join(tempRoot(), 'home');
    const runs = [
      { as: root, tmpdir: '/nonexistent' },
      { as: service, tmpdir: '/nonexistent' },
      { as: service, tmpdir: unreadable },
    ];
    const seen: string[] = [];
    for (const { as, tmpdir } of runs) {
      const r = lastJson<OpsReport>(await runAs(fixture('fallback-ops.mjs'), [home, '0', 'anchor'], as, { TMPDIR: tmpdir, HERMES_MANAGED: 'false' }, 30_000));
      seen.push(`${as.uid === 0 ? 'root' : 'service'} TMPDIR=${tmpdir === unreadable ? '<unreadable>' : tmpdir}: ${r.resolver}`);
      expect([tmpdir, r.resolver, r.reason, r.logged]).toEqual([tmpdir, 'procfd', null, []]);
    }
    console.log(`row 2: unusable TMPDIR: ${String(seen.filter((s) => s.endsWith('procfd')).length)} of ${String(runs.length)} runs in procfd mode (${seen.join('; ')})`);
  }, 60_000);

  it('row 2: /proc masked: root, HERMES_UID and writes into a shared home are refused with EUNSAFE_FALLBACK; a single user in an unshared home works', async () => {
    const refused: string[] = [];
    const count = (who: string, r: OpsReport): void => {
      const k = Object.values(r.results).filter((c) => c === 'EUNSAFE_FALLBACK').length;
      refused.push(`${who} ${String(k)}/${String(Object.keys(r.results).length)}`);
    };

    // Root, in an unshared home of its own: every operation, reads included, refused; nothing created.
    const rootCase = layout(root, 0o700);
    const asRoot = await ops(rootCase.home, root, { HERMES_MANAGED: 'false' }, EVERY);
    count('root', asRoot);
    expect([asRoot.resolver, asRoot.reason, asRoot.allow]).toEqual(['fallback', MASKED_REASON, false]);
    expect(asRoot.results).toEqual(all(EVERY, 'EUNSAFE_FALLBACK'));
    expect(asRoot.messages.write).toContain(
      `refusing to change ${path.join(rootCase.home, 'pending_messages')} by path: descriptors are unavailable (${MASKED_REASON}) and the process runs as root (euid 0)`,
    );
    expect(asRoot.messages.write).toContain('Fix: descriptor-relative resolution (/proc/self/fd) is unavailable');
    expect(asRoot.logged.some((l) => l.startsWith(`error: refusing to change ${path.join(rootCase.home, 'pending_messages')} by path`) && l.includes('"code":"EUNSAFE_FALLBACK"'))).toBe(true);
    expect(tree(rootCase.home)).toEqual([]);
    expect((fs.statSync(rootCase.home).mode & 0o7777).toString(8)).toBe('700');

    // Root with HERMES_UID/HERMES_GID (the writer that chowns to the service): refused.
    const uidCase = layout(service, 0o700);
    const ids = { HERMES_MANAGED: 'false', HERMES_UID: String(service.uid), HERMES_GID: String(service.gid) };
    const rootWithUid = await ops(uidCase.home, root, ids, WRITES);
    count('root+HERMES_UID', rootWithUid);
    expect(rootWithUid.results).toEqual(all(WRITES, 'EUNSAFE_FALLBACK'));
    // The same variables make a non-root process privileged too (it acts for another uid).
    const serviceWithUid = await ops(uidCase.home, service, ids, WRITES);
    count('service+HERMES_UID', serviceWithUid);
    expect(serviceWithUid.results).toEqual(all(WRITES, 'EUNSAFE_FALLBACK'));
    expect(serviceWithUid.messages.write).toContain('and HERMES_UID is set (the process acts for another uid)');
    expect(tree(uidCase.home)).toEqual([]);

    // The service in a managed 2770 home: every write refused, reading (the scan, a directory held to read) still works.
    const managed = layout(service, 0o2770);
    for (const d of ['pending_messages', 'moa-traces', 'sessions', 'cron', 'logs', 'memories']) shareDir(path.join(managed.home, d));
    const before = tree(managed.home);
    const svc = await ops(managed.home, service, { HERMES_MANAGED: 'nixos' }, [...WRITES, ...READS, 'sweep']);
    count('service/managed', svc);
    // The sweep removes by name: in a tree the group can rename in, it is a write like the others.
    expect(svc.results).toEqual({ ...all(WRITES, 'EUNSAFE_FALLBACK'), ...all(READS, 'ok'), sweep: 'EUNSAFE_FALLBACK' });
    expect(svc.messages.sweep).toContain(`and ${managed.home} is writable by its group (mode 2770)`);
    expect(svc.messages.append).toContain('and the home is a managed, group-shared install');
    // A 2770 home that the environment calls unmanaged (a marker or a variable that lies) is shared all the same.
    const lied = await ops(managed.home, service, { HERMES_MANAGED: 'false' }, ['write', 'append', 'mkdir']);
    count('service/2770 called unmanaged', lied);
    expect(lied.results).toEqual(all(['write', 'append', 'mkdir'], 'EUNSAFE_FALLBACK'));
    expect(lied.messages.write).toContain(`and ${managed.home} is writable by its group (mode 2770)`);
    expect(tree(managed.home)).toEqual(before);

    // A single user in its own unshared 0700 home: everything works, as on a system without /proc.
    const own = layout(service, 0o700);
    const single = await ops(own.home, service, { HERMES_MANAGED: 'false' }, [...EVERY, 'read']);
    expect(single.results).toEqual(all([...EVERY, 'read'], 'ok'));
    expect(fs.readFileSync(path.join(own.home, 'pending_messages', 'p.json'), 'utf8')).toBe('{\n  "ok": true\n}\n');
    expect(fs.statSync(path.join(own.home, 'pending_messages', 'p.json')).uid).toBe(service.uid);

    // The opt-in: the option alone, or the variable alone, changes nothing; both together allow it, loudly.
    const optCase = layout(root, 0o700);
    const optionOnly = await ops(optCase.home, root, { HERMES_MANAGED: 'false' }, ['write'], true);
    const variableOnly = await ops(optCase.home, root, { HERMES_MANAGED: 'false', HERMES_ALLOW_PATH_FALLBACK: '1' }, ['write'], false);
    expect([optionOnly.allow, optionOnly.results.write, variableOnly.allow, variableOnly.results.write]).toEqual([false, 'EUNSAFE_FALLBACK', false, 'EUNSAFE_FALLBACK']);
    expect(optionOnly.logged).toContain('warn: allowPathFallback has no effect without HERMES_ALLOW_PATH_FALLBACK=1 in the environment');
    expect(variableOnly.logged).toContain('warn: HERMES_ALLOW_PATH_FALLBACK=1 has no effect: this program does not allow path fallback');
    const optedIn = await ops(optCase.home, root, { HERMES_MANAGED: 'false', HERMES_ALLOW_PATH_FALLBACK: '1' }, [...WRITES, 'scan', 'sweep'], true);
    expect([optedIn.allow, optedIn.results]).toEqual([true, { ...all(WRITES, 'ok'), scan: 'EUNSAFE_FALLBACK', sweep: 'EUNSAFE_FALLBACK' }]);
    expect(
      optedIn.logged.filter((l) => l.startsWith('warn: acting by path although the process runs as root (euid 0)') && l.includes('allowed by HERMES_ALLOW_PATH_FALLBACK=1 and allowPathFallback')),
    ).toHaveLength(1);
    expect(fs.readFileSync(path.join(optCase.home, 'pending_messages', 'p.json'), 'utf8')).toBe('{\n  "ok": true\n}\n');
    const sharedOptIn = await ops(managed.home, service, { HERMES_MANAGED: 'nixos', HERMES_ALLOW_PATH_FALLBACK: '1' }, ['write'], true);
    expect(sharedOptIn.results).toEqual({ write: 'ok' });
    expect(sharedOptIn.logged.some((l) => l.startsWith('warn: acting by path although the home is a managed, group-shared install'))).toBe(true);

    console.log(
      `row 2: /proc masked + TMPDIR=/nonexistent: refused ${refused.join(', ')}; single user ${String(Object.values(single.results).filter((c) => c === 'ok').length)}/${String(Object.keys(single.results).length)} ok; opt-in: option only refused, variable only refused, both ${String(Object.values(optedIn.results).filter((c) => c === 'ok').length)} writes ok with a warning`,
    );
  }, 60_000);

  /** Races the attacker (own uid, own process, tight loop) against a victim run in the masked namespace. */
  async function race(attack: readonly string[], victim: { script: string; args: readonly string[]; as: As; env: Record<string, string> }, stop: string): Promise<{ victim: LoopReport; rounds: number }> {
    const attackerRun = runAs(ATTACKER, [attack[0] ?? '', stop, '60000', ...attack.slice(1)], attacker, {}, 75_000);
    await new Promise((r) => setTimeout(r, 50));
    let v: Proc;
    try {
      v = await runMasked(victim.script, victim.args, victim.as, victim.env, 50_000);
    } finally {
      fs.writeFileSync(stop, '');
    }
    const done = await attackerRun;
    return { victim: lastJson<LoopReport>(v), rounds: lastJson<{ rounds: number }>(done).rounds };
  }

  it(`row 2: the race in fallback mode — the control escapes, refused actors 0 escapes in ${String(ITERATIONS)} operations each`, async () => {
    const managedEnv = (home: string): Record<string, string> => ({ HERMES_HOME: home, HERMES_MANAGED: 'nixos' });
    // Control: plain path operations (what fallback mode amounts to), same namespace, same race: hit.
    let control = 0;
    let controlRuns = 0;
    for (let round = 0; round < 5 && control === 0; round++) {
      const c = layout(service, 0o2770);
      shareDir(path.join(c.home, 'pending_messages'));
      const r = await race(['swap', c.home, 'pending_messages', c.outside], { script: fixture('naive.mjs'), args: ['write', c.home, String(ITERATIONS)], as: service, env: {} }, c.stop);
      controlRuns += r.victim.iterations;
      control = tree(c.outside).length;
    }
    expect(control).toBeGreaterThan(0);
    // Measured, not asserted: what the explicit opt-in leaves open (fs-policy acting by path in a shared home).
    const o = layout(service, 0o2770);
    shareDir(path.join(o.home, 'sessions'));
    const optedIn = await race(['swap', o.home, 'sessions', o.outside], { script: fixture('fallback-loop.mjs'), args: ['mkdir', o.home, String(ITERATIONS)], as: service, env: { ...managedEnv(o.home), HERMES_ALLOW_PATH_FALLBACK: '1' } }, o.stop);
    expect(optedIn.victim.iterations).toBe(ITERATIONS);
    const optedInEscapes = tree(o.outside).length;

    const lines: string[] = [];
    const check = (name: string, r: { victim: LoopReport; rounds: number }, outside: string): void => {
      lines.push(`${name} ${String(r.victim.iterations)} ops vs ${String(r.rounds)} rounds: ok ${String(r.victim.ok)}, ${JSON.stringify(r.victim.codes)}, outside ${String(tree(outside).length)}`);
      expect(tree(outside)).toEqual([]);
      expect([r.victim.ok, r.victim.codes]).toEqual([0, { EUNSAFE_FALLBACK: r.victim.iterations }]);
    };

    // The service in the managed home, the three swaps of attacks.test.ts, with its victim fixture.
    for (const [op, dir] of [['write', 'pending_messages'], ['append', 'moa-traces'], ['mkdir', 'sessions']] as const) {
      const l = layout(service, 0o2770);
      shareDir(path.join(l.home, dir));
      const r = await race(['swap', l.home, dir, l.outside], { script: fixture('victim.mjs'), args: [op, l.home, String(ITERATIONS)], as: service, env: managedEnv(l.home) }, l.stop);
      check(`service ${op}-swap`, r, l.outside);
    }
    // Pre-created and hard-linked targets (attacks.test.ts › plant): refused before any of them is opened.
    {
      const l = layout(service, 0o2770);
      shareDir(path.join(l.home, 'moa-traces'));
      const bait = path.join(l.outside, 'attacker.jsonl');
      fs.writeFileSync(bait, 'attacker\n', { mode: 0o644 });
      fs.chownSync(bait, attacker.uid, users.gid);
      const r = await race(['plant', path.join(l.home, 'moa-traces'), 'x', '700', bait], { script: fixture('victim.mjs'), args: ['planted', l.home, '700', 'x'], as: service, env: managedEnv(l.home) }, l.stop);
      lines.push(`service planted ${String(r.victim.iterations * 3)} ops vs ${String(r.rounds)} rounds: ok ${String(r.victim.ok)}, ${JSON.stringify(r.victim.codes)}`);
      expect(fs.readFileSync(bait, 'utf8')).toBe('attacker\n');
      expect([r.victim.ok, r.victim.codes]).toEqual([0, { EUNSAFE_FALLBACK: r.victim.iterations * 3 }]);
    }
    // Root with HERMES_UID: a swapped artifact directory leading to a root-only directory.
    {
      const l = layout(service, 0o2770);
      shareDir(path.join(l.home, 'pending_messages'));
      const rootOnly = path.join(l.base, 'root-only');
      fs.mkdirSync(rootOnly, { mode: 0o700 });
      const env = { ...managedEnv(l.home), HERMES_UID: String(service.uid), HERMES_GID: String(users.gid) };
      const r = await race(['swap', l.home, 'pending_messages', rootOnly], { script: fixture('victim.mjs'), args: ['write', l.home, String(ITERATIONS)], as: root, env }, l.stop);
      check('root+HERMES_UID write-swap', r, rootOnly);
    }
    // Root with HERMES_UID against a home whose group-writable parent lets the attacker relink the home itself.
    {
      const base = path.join(mnt, `case-${String(n++)}`);
      fs.mkdirSync(base, { mode: 0o755 });
      const state = path.join(base, 'state');
      shareDir(state);
      const home = path.join(state, 'home');
      shareDir(home);
      const rootOnly = path.join(base, 'root-only');
      fs.mkdirSync(rootOnly, { mode: 0o700 });
      const env = { ...managedEnv(home), HERMES_UID: String(service.uid), HERMES_GID: String(users.gid) };
      const r = await race(['relink', state, 'home', rootOnly], { script: fixture('victim.mjs'), args: ['write', home, String(ITERATIONS)], as: root, env }, path.join(base, 'stop'));
      check('root+HERMES_UID relinked-home', r, rootOnly);
    }
    // Root without HERMES_UID: the same swap.
    {
      const l = layout(service, 0o2770);
      shareDir(path.join(l.home, 'pending_messages'));
      const rootOnly = path.join(l.base, 'root-only');
      fs.mkdirSync(rootOnly, { mode: 0o700 });
      const r = await race(['swap', l.home, 'pending_messages', rootOnly], { script: fixture('victim.mjs'), args: ['write', l.home, String(ITERATIONS)], as: root, env: managedEnv(l.home) }, l.stop);
      check('root write-swap', r, rootOnly);
    }
    console.log(
      `row 2: fallback race: control (plain fs) ${String(control)} payloads outside in ${String(controlRuns)} writes; opted in (allowed by path) ${String(optedInEscapes)} directories outside in ${String(ITERATIONS)} mkdirs; fail closed: ${lines.join('; ')}`,
    );
  }, 120_000);
});
