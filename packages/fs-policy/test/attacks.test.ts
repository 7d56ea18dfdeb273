/**
 * The threat model of docs/permissions.md, attacked for real: a member of the service group — a real second
 * uid, in its own process, racing in a tight loop — against the service uid (or root) doing its normal work.
 * Every race also runs against a naive implementation (plain `fs` calls) first: that control must be hit, so
 * the attack is shown to work and the zero escapes of fs-policy mean something.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ATTACKER, createTestUsers, describeNeeds, lastJson, runAs as run, tempRoot, tree, type TestUsers } from '@hermes/test-utils';
import { sweepTempFilesSync } from '../src/index.js';
import { fixture } from './helpers.js';

const ITERATIONS = 2000;
/** The control races at most this many rounds, and for at most this long, to show an escape. */
const CONTROL_ROUNDS = 25;
const CONTROL_BUDGET_MS = 120_000;

interface VictimReport {
  ok: number;
  codes: Record<string, number>;
  iterations: number;
}

describeNeeds(['root', 'linux', 'useradd', 'mount'], 'attacks by a member of the service group (real second uid, own process, tight loop)', () => {
  let users: TestUsers;
  let mnt: string;
  let service: { uid: number; gid: number };
  let attacker: { uid: number; gid: number };
  let n = 0;

  beforeAll(() => {
    users = createTestUsers(2);
    service = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    attacker = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    // A tmpfs: fsync is cheap, so thousands of durable writes fit in a test, and everything shares one
    // filesystem (renames across the home boundary are possible, as on a real volume).
    mnt = path.join(tempRoot(), 'fs');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m,mode=0755', 'tmpfs', mnt]);
  });
  afterAll(() => {
    spawnSync('umount', ['-l', mnt]);
    users.cleanup();
  });

  /** A managed home (2770, service:group) and the attacker's own world-writable directory outside it. */
  function layout(): { base: string; home: string; outside: string; stop: string } {
    const base = path.join(mnt, `case-${String(n++)}`);
    fs.mkdirSync(base, { mode: 0o755 });
    const home = path.join(base, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, service.uid, users.gid);
    fs.chmodSync(home, 0o2770);
    const outside = path.join(base, 'outside');
    fs.mkdirSync(outside);
    fs.chownSync(outside, attacker.uid, users.gid);
    fs.chmodSync(outside, 0o777);
    return { base, home, outside, stop: path.join(base, 'stop') };
  }

  async function race(
    attack: readonly string[],
    victim: { script: string; args: readonly string[]; as: { uid: number; gid: number }; env: Record<string, string> },
    stop: string,
  ): Promise<{ victim: VictimReport; rounds: number }> {
    const attackerRun = run(ATTACKER, [attack[0] ?? '', stop, '120000', ...attack.slice(1)], attacker, {}, 150_000);
    await new Promise((r) => setTimeout(r, 50)); // let the attacker get going
    const victimRun = await run(victim.script, victim.args, victim.as, victim.env, 120_000);
    fs.writeFileSync(stop, '');
    const attackerDone = await attackerRun;
    return { victim: lastJson<VictimReport>(victimRun), rounds: lastJson<{ rounds: number }>(attackerDone).rounds };
  }

  const managedEnv = (home: string): Record<string, string> => ({ HERMES_HOME: home, HERMES_MANAGED: 'nixos' });

  /**
   * Runs the naive control until the race has hit it (at most five rounds of ITERATIONS): the attack must be
   * shown to work before fs-policy's zero means anything. Returns the escapes `count()` measured.
   */
  async function control(setup: () => ReturnType<typeof layout>, attack: (l: ReturnType<typeof layout>) => string[], op: string, as: { uid: number; gid: number }, count: (l: ReturnType<typeof layout>) => number): Promise<number> {
    // A race a loaded machine may lose a few times (the mkdir control escapes 1-5 times per 2,000 calls):
    // rounds until the first escape, bounded by a count and by time, so "the attack is real" never rests on luck.
    const deadline = Date.now() + CONTROL_BUDGET_MS;
    for (let round = 0; round < CONTROL_ROUNDS && (round === 0 || Date.now() < deadline); round++) {
      const l = setup();
      await race(attack(l), { script: fixture('naive.mjs'), args: [op, l.home, String(ITERATIONS)], as, env: {} }, l.stop);
      const escapes = count(l);
      if (escapes > 0) return escapes;
    }
    return 0;
  }

  function untyped(codes: Record<string, number>): string[] {
    return Object.keys(codes).filter((c) => c.startsWith('UNTYPED'));
  }

  it(`directory swapped for a link during atomic writes: control escapes, fs-policy 0 escapes in ${String(ITERATIONS)} writes`, async () => {
    // Control: the same race against plain writeFileSync lands files in the attacker's directory.
    const withSpool = (): ReturnType<typeof layout> => {
      const c = layout();
      fs.mkdirSync(path.join(c.home, 'pending_messages'));
      fs.chownSync(path.join(c.home, 'pending_messages'), service.uid, users.gid);
      fs.chmodSync(path.join(c.home, 'pending_messages'), 0o2770);
      return c;
    };
    const controlEscapes = await control(withSpool, (c) => ['swap', c.home, 'pending_messages', c.outside], 'write', service, (c) => tree(c.outside).length);
    expect(controlEscapes).toBeGreaterThan(0);

    const l = layout();
    const r = await race(['swap', l.home, 'pending_messages', l.outside], { script: fixture('victim.mjs'), args: ['write', l.home, String(ITERATIONS)], as: service, env: managedEnv(l.home) }, l.stop);
    const landed = tree(l.home).filter((p) => /(^|\/)p-\d+\.json$/.test(p));
    console.log(
      `attack write-swap: ${String(r.victim.iterations)} writes vs ${String(r.rounds)} attacker rounds; ok ${String(r.victim.ok)}, refused ${JSON.stringify(r.victim.codes)}; escapes: control ${String(controlEscapes)}, fs-policy ${String(tree(l.outside).length)}`,
    );
    expect(tree(l.outside)).toEqual([]);
    expect(untyped(r.victim.codes)).toEqual([]);
    expect(landed).toHaveLength(r.victim.ok);
    expect(r.victim.ok + Object.values(r.victim.codes).reduce((a, b) => a + b, 0)).toBe(ITERATIONS);
  }, 300_000);

  it(`directory swapped for a link during appends: 0 lines in the attacker's world-readable file in ${String(ITERATIONS)} appends`, async () => {
    const seed = (l: ReturnType<typeof layout>): string => {
      const dir = path.join(l.home, 'moa-traces');
      fs.mkdirSync(dir);
      fs.chownSync(dir, service.uid, users.gid);
      fs.chmodSync(dir, 0o2770);
      const bait = path.join(l.outside, 's.jsonl');
      fs.writeFileSync(bait, '', { mode: 0o666 });
      fs.chownSync(bait, attacker.uid, users.gid);
      fs.chmodSync(bait, 0o666);
      return bait;
    };
    const controlLines = await control(
      () => {
        const c = layout();
        seed(c);
        return c;
      },
      (c) => ['swap', c.home, 'moa-traces', c.outside],
      'append',
      service,
      (c) => fs.readFileSync(path.join(c.outside, 's.jsonl'), 'utf8').split('\n').filter(Boolean).length,
    );
    expect(controlLines).toBeGreaterThan(0);

    const l = layout();
    const bait = seed(l);
    const r = await race(['swap', l.home, 'moa-traces', l.outside], { script: fixture('victim.mjs'), args: ['append', l.home, String(ITERATIONS)], as: service, env: managedEnv(l.home) }, l.stop);
    const lines = tree(l.home)
      .filter((p) => p.endsWith('s.jsonl'))
      .flatMap((p) => fs.readFileSync(path.join(l.home, p), 'utf8').split('\n').filter(Boolean));
    console.log(
      `attack append-swap: ${String(r.victim.iterations)} appends vs ${String(r.rounds)} attacker rounds; ok ${String(r.victim.ok)}, refused ${JSON.stringify(r.victim.codes)}; lines in the attacker's file: control ${String(controlLines)}, fs-policy ${String(fs.readFileSync(bait, 'utf8').length)} bytes`,
    );
    expect(fs.readFileSync(bait, 'utf8')).toBe('');
    expect(tree(l.outside)).toEqual(['s.jsonl']);
    expect(untyped(r.victim.codes)).toEqual([]);
    expect(lines).toHaveLength(r.victim.ok);
  }, 300_000);

  it(`directory swapped for a link during mkdir: 0 directories created outside in ${String(ITERATIONS)} calls`, async () => {
    const seed = (l: ReturnType<typeof layout>): void => {
      const dir = path.join(l.home, 'sessions');
      fs.mkdirSync(dir);
      fs.chownSync(dir, service.uid, users.gid);
      fs.chmodSync(dir, 0o2770);
    };
    const controlEscapes = await control(
      () => {
        const c = layout();
        seed(c);
        return c;
      },
      (c) => ['swap', c.home, 'sessions', c.outside],
      'mkdir',
      service,
      (c) => tree(c.outside).length,
    );
    expect(controlEscapes).toBeGreaterThan(0);

    const l = layout();
    seed(l);
    const r = await race(['swap', l.home, 'sessions', l.outside], { script: fixture('victim.mjs'), args: ['mkdir', l.home, String(ITERATIONS)], as: service, env: managedEnv(l.home) }, l.stop);
    console.log(
      `attack mkdir-swap: ${String(r.victim.iterations)} calls vs ${String(r.rounds)} attacker rounds; ok ${String(r.victim.ok)}, refused ${JSON.stringify(r.victim.codes)}; created outside: control ${String(controlEscapes)}, fs-policy ${String(tree(l.outside).length)}`,
    );
    expect(tree(l.outside)).toEqual([]);
    expect(untyped(r.victim.codes)).toEqual([]);
  }, 300_000);

  it('pre-created and hard-linked targets: nothing is written into the attacker\'s files, nothing owner-only becomes readable', async () => {
    const l = layout();
    const dir = path.join(l.home, 'moa-traces');
    fs.mkdirSync(dir);
    fs.chownSync(dir, service.uid, users.gid);
    fs.chmodSync(dir, 0o2770);
    const outsideFile = path.join(l.outside, 'attacker.jsonl');
    fs.writeFileSync(outsideFile, 'attacker\n');
    fs.chownSync(outsideFile, attacker.uid, users.gid);
    fs.chmodSync(outsideFile, 0o644);
    const count = 300;
    const r = await race(['plant', dir, 'x', String(count), outsideFile], { script: fixture('victim.mjs'), args: ['planted', l.home, String(count), 'x'], as: service, env: managedEnv(l.home) }, l.stop);
    let attackerFiles = 0;
    let serviceFiles = 0;
    for (const name of fs.readdirSync(dir)) {
      const st = fs.lstatSync(path.join(dir, name));
      if (st.uid === attacker.uid) {
        attackerFiles++;
        if (st.ino !== fs.statSync(outsideFile).ino) expect([name, st.size]).toEqual([name, 0]); // never written into
      } else {
        serviceFiles++;
        expect([name, st.uid, (st.mode & 0o7777).toString(8)]).toEqual([name, service.uid, '600']);
      }
    }
    console.log(
      `attack plant: ${String(count)} names x 3 operations vs ${String(r.rounds)} attacker rounds; ok ${String(r.victim.ok)}, refused ${JSON.stringify(r.victim.codes)}; attacker-owned names ${String(attackerFiles)}, service-owned ${String(serviceFiles)}`,
    );
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('attacker\n');
    expect(untyped(r.victim.codes)).toEqual([]);
    expect(r.victim.codes.EFOREIGN_OWNER ?? 0).toBeGreaterThan(0);
  }, 300_000);

  it(`as root with HERMES_UID: a home whose parent the group can write is refused; 0 files in a root-only directory in ${String(ITERATIONS)} writes`, async () => {
    const base = path.join(mnt, `case-${String(n++)}`);
    fs.mkdirSync(base, { mode: 0o755 });
    const state = path.join(base, 'state'); // like a NixOS state directory shared with the group
    fs.mkdirSync(state);
    fs.chownSync(state, service.uid, users.gid);
    fs.chmodSync(state, 0o2770);
    const home = path.join(state, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, service.uid, users.gid);
    fs.chmodSync(home, 0o2770);
    const rootOnly = path.join(base, 'root-only');
    fs.mkdirSync(rootOnly, { mode: 0o700 });
    const stop = path.join(base, 'stop');
    const env = { ...managedEnv(home), HERMES_UID: String(service.uid), HERMES_GID: String(users.gid) };
    const r = await race(['relink', state, 'home', rootOnly], { script: fixture('victim.mjs'), args: ['write', home, String(ITERATIONS)], as: { uid: 0, gid: 0 }, env }, stop);
    console.log(
      `attack root-relinked-home: ${String(r.victim.iterations)} writes as root vs ${String(r.rounds)} attacker rounds; ok ${String(r.victim.ok)}, refused ${JSON.stringify(r.victim.codes)}; files in the root-only directory: ${String(tree(rootOnly).length)}`,
    );
    expect(tree(rootOnly)).toEqual([]);
    expect(r.victim.ok).toBe(0);
    expect(r.victim.codes.EUNSAFE_PATH ?? 0).toBeGreaterThan(0);
    expect(untyped(r.victim.codes)).toEqual([]);
  }, 300_000);

  it(`as root with HERMES_UID in a safe chain: a swapped artifact directory never leads root into a root-only directory (${String(ITERATIONS)} writes)`, async () => {
    const controlEscapes = await control(
      () => {
        const c = layout();
        fs.mkdirSync(path.join(c.base, 'root-only'), { mode: 0o700 });
        fs.mkdirSync(path.join(c.home, 'pending_messages'));
        return c;
      },
      (c) => ['swap', c.home, 'pending_messages', path.join(c.base, 'root-only')],
      'write',
      { uid: 0, gid: 0 },
      (c) => tree(path.join(c.base, 'root-only')).length,
    );
    expect(controlEscapes).toBeGreaterThan(0);

    const l = layout();
    const rootOnly = path.join(l.base, 'root-only');
    fs.mkdirSync(rootOnly, { mode: 0o700 });
    fs.mkdirSync(path.join(l.home, 'pending_messages'));
    fs.chownSync(path.join(l.home, 'pending_messages'), service.uid, users.gid);
    fs.chmodSync(path.join(l.home, 'pending_messages'), 0o2770);
    const env = { ...managedEnv(l.home), HERMES_UID: String(service.uid), HERMES_GID: String(users.gid) };
    const r = await race(['swap', l.home, 'pending_messages', rootOnly], { script: fixture('victim.mjs'), args: ['write', l.home, String(ITERATIONS)], as: { uid: 0, gid: 0 }, env }, l.stop);
    console.log(
      `attack root-swap: ${String(r.victim.iterations)} writes as root vs ${String(r.rounds)} attacker rounds; ok ${String(r.victim.ok)}, refused ${JSON.stringify(r.victim.codes)}; files in the root-only directory: control ${String(controlEscapes)}, fs-policy ${String(tree(rootOnly).length)}`,
    );
    expect(tree(rootOnly)).toEqual([]);
    expect(untyped(r.victim.codes)).toEqual([]);
    expect(r.victim.ok).toBeGreaterThan(0);
  }, 300_000);

  it('FIFOs planted at every read and write site (the attacker toggling a reader): typed refusals, 0 hangs', async () => {
    const l = layout();
    for (const d of ['moa-traces', 'pending_messages']) {
      fs.mkdirSync(path.join(l.home, d));
      fs.chownSync(path.join(l.home, d), service.uid, users.gid);
      fs.chmodSync(path.join(l.home, d), 0o2770);
    }
    const fifos = ['.managed', 'config.yaml', 'moa-traces/f.jsonl', 'pending_messages/f.json', 'state.db', `pending_messages/.x.json.1-1.0123456789ab.tmp`].map((p) =>
      path.join(l.home, p),
    );
    const iterations = 200;
    const attackerRun = run(ATTACKER, ['fifo', l.stop, '120000', ...fifos], attacker, {}, 150_000);
    for (let i = 0; i < 100 && !fifos.every((f) => fs.existsSync(f)); i++) await new Promise((r) => setTimeout(r, 20));
    const v = lastJson<VictimReport>(await run(fixture('victim.mjs'), ['fifo', l.home, String(iterations)], service, { HERMES_MANAGED: 'nixos' }, 60_000));
    fs.writeFileSync(l.stop, '');
    const rounds = lastJson<{ rounds: number }>(await attackerRun).rounds;
    console.log(`attack fifo: ${String(iterations)} x 7 sites vs ${String(rounds)} attacker rounds; outcomes ${JSON.stringify(v.codes)}; 0 hangs`);
    expect(v.codes).toEqual({ MARKER_OK: iterations, SWEEP_OK: iterations, ENOTREGULAR: iterations * 5 });
    for (const f of fifos) expect(fs.lstatSync(f).isFIFO()).toBe(true);
  }, 120_000);
});

describeNeeds(['root', 'linux', 'unshare'], 'the sweep and a writer in another pid namespace (a container sharing the volume)', () => {
  it('a live writer\'s temp file is never taken for an orphan: its pid means nothing here, only age decides', async () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    const dir = path.join(home, 'pending_messages');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const target = path.join(dir, 'pending-1.json');
    // Paused at the rename: the temp has its name with the named temp and with the unnamed one (linked by then).
    const writer = spawn('unshare', ['--pid', '--fork', '--kill-child', process.execPath, fixture('pause-at.mjs'), target, 'rename', 'PAYLOAD'], {
      env: { PATH: process.env.PATH, HERMES_HOME: home, HERMES_MANAGED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => {
          reject(new Error('the writer never paused'));
        }, 20_000);
        writer.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('PAUSED')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      const [temp] = fs.readdirSync(dir);
      const myNs = fs.readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, '$1');
      expect(temp).toMatch(/^\.pending-1\.json\.\d+-\d+\.[0-9a-f]{12}\.tmp$/);
      expect(temp).not.toContain(`-${myNs}.`); // the writer's own namespace travels in the name
      const swept = sweepTempFilesSync(home, { remove: true });
      expect(swept.found.map((t) => [path.basename(t.path), t.pidAlive, t.stale])).toEqual([[temp, null, false]]);
      expect(swept.removed).toEqual([]);
      expect(fs.readdirSync(dir)).toEqual([temp]);
      console.log(`sweep across pid namespaces: the live writer's ${String(temp)} kept (pid unknowable here, age 0)`);
      // Once old enough, age alone decides.
      const later = sweepTempFilesSync(home, { remove: true, now: Date.now() + 2 * 3_600_000 });
      expect(later.removed.map((p) => path.basename(p))).toEqual([temp]);
    } finally {
      writer.kill('SIGKILL');
    }
  }, 60_000);
});
