/**
 * Issue #23, row 1, the CLI half: a member of the service group (a real second uid, its own process, a tight
 * loop) swaps `state.db` for a link into a root-only directory while root runs `hermes-fs pending recover` and
 * `hermes-fs save` over and over. Root acts as the home's owner for content, so the link leads only where the
 * owner may go: nothing is created in the root-only directory, the root-only database is never read, and no
 * run hangs (every run has a timeout).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, race, runNode, tempRoot, tree, type TestUsers } from '@hermes/test-utils';
import { BIN, fixture } from './helpers.js';

/**
 * CLI runs per command (each is root's process plus the owner's re-run, racing an attacker that keeps a core busy:
 * about 0.7 s a run on an idle 2-core machine, several seconds on a loaded one — hence the long timeout).
 */
const RUNS = 100;
/** A run that takes longer than this is a hang. */
const RUN_TIMEOUT_MS = 30_000;

interface Outcomes {
  runs: number;
  hangs: number;
  byStatus: Record<string, number>;
  /** Runs whose output shows the root-only session: read through the link. */
  leaked: number;
}

/** Every entry of `dir` with its bytes' hash, owner and mode: what "untouched" is measured on. */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of tree(dir)) {
    const st = fs.lstatSync(path.join(dir, rel));
    const hash = st.isFile() ? createHash('sha256').update(fs.readFileSync(path.join(dir, rel))).digest('hex') : '-';
    out[rel] = `${(st.mode & 0o7777).toString(8)} ${String(st.uid)} ${hash}`;
  }
  return out;
}

function loop(args: readonly string[], secret: string): Outcomes {
  const o: Outcomes = { runs: 0, hangs: 0, byStatus: {}, leaked: 0 };
  for (let i = 0; i < RUNS; i++) {
    o.runs++;
    try {
      const r = runNode(BIN, args, { timeoutMs: RUN_TIMEOUT_MS, env: { HERMES_MANAGED: 'nixos' } });
      const key = String(r.status ?? r.signal);
      o.byStatus[key] = (o.byStatus[key] ?? 0) + 1;
      if (r.stdout.includes(secret)) o.leaked++;
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'ETIMEDOUT') throw err;
      o.hangs++;
    }
  }
  return o;
}

describeNeeds(['root', 'linux', 'useradd'], 'row 1 (CLI): state.db swapped for a link while root runs hermes-fs', () => {
  let users: TestUsers;
  let owner: { uid: number; gid: number };
  let member: { uid: number; gid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    owner = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    member = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
  });
  afterAll(() => {
    users.cleanup();
  });

  it(`row 1 (CLI): ${String(RUNS)} pending recover and ${String(RUNS)} save runs as root against a looping link swap: 0 files created in a root-only directory, 0 root-only sessions read, 0 hangs`, async () => {
    const base = tempRoot();
    // The root-only directory: a database of root's own, with a session the home does not have.
    const rootOnly = path.join(base, 'root-only');
    fs.mkdirSync(rootOnly, { mode: 0o700 });
    fs.chmodSync(rootOnly, 0o700);
    const secretDb = openSessionDb({ path: path.join(rootOnly, 'secret.db'), home: rootOnly });
    secretDb.createSession({ id: 'root-secret', source: 'cli', model: 'm', sessionKey: 'agent:main:cli:dm:0', title: 'root only' });
    secretDb.appendMessage({ sessionId: 'root-secret', role: 'user', content: 'ROOT-ONLY-CONTENT', timestamp: 1_764_000_000 });
    secretDb.close();
    // The managed home of the service uid, seeded through the packages' APIs, with spool files recovery leaves in
    // place (an agent-history snapshot, an unresolved payload): every recover run opens state.db.
    const home = path.join(base, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, owner.uid, owner.gid);
    fs.chmodSync(home, 0o2770);
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
    const seeded = runNode(fixture('seed-home.mjs'), [home], { umask: 0o007, env, ...owner });
    expect(seeded.status, seeded.stderr).toBe(0);
    const extra = runNode(fixture('spool-extra.mjs'), [home, 'seed-session-1'], { umask: 0o007, env, ...owner });
    expect(extra.status, extra.stderr).toBe(0);
    const before = contents(rootOnly);
    expect(Object.keys(before)).toEqual(['secret.db']);

    const recover = await race(path.join(base, 'stop-recover'), ['swap', home, 'state.db', path.join(rootOnly, 'planted.db')], member, () =>
      Promise.resolve(loop(['pending', 'recover', '--home', home, '--json'], 'ROOT-ONLY-CONTENT')),
    );
    const save = await race(path.join(base, 'stop-save'), ['swap', home, 'state.db', path.join(rootOnly, 'secret.db')], member, () =>
      Promise.resolve(loop(['save', '--session', 'root-secret', '--home', home, '--output', 'incident.json', '--json'], 'ROOT-ONLY-CONTENT')),
    );
    const saved = path.join(home, 'sessions', 'saved', 'incident.json');
    const leakedToDisk = fs.existsSync(saved) && fs.readFileSync(saved, 'utf8').includes('ROOT-ONLY-CONTENT') ? 1 : 0;
    const created = tree(rootOnly).filter((rel) => rel !== 'secret.db');
    console.log(
      `row 1 (CLI): ${String(recover.victim.runs)} recover runs (exit ${JSON.stringify(recover.victim.byStatus)}) vs ${String(recover.rounds)} attacker rounds, ` +
        `${String(save.victim.runs)} save runs (exit ${JSON.stringify(save.victim.byStatus)}) vs ${String(save.rounds)} attacker rounds; ` +
        `${String(created.length)} files created in the root-only directory, ${String(save.victim.leaked + recover.victim.leaked + leakedToDisk)} root-only sessions read, ` +
        `${String(recover.victim.hangs + save.victim.hangs)} hangs`,
    );
    expect(created).toEqual([]);
    expect(contents(rootOnly)).toEqual(before);
    expect(save.victim.leaked + recover.victim.leaked + leakedToDisk).toBe(0);
    expect(recover.victim.hangs + save.victim.hangs).toBe(0);
    expect(recover.rounds).toBeGreaterThan(0);
    expect(save.rounds).toBeGreaterThan(0);
    // Nothing root-owned was left in the home either: everything there is the owner's (or the member's link).
    const rootOwned = tree(home).filter((rel) => fs.lstatSync(path.join(home, rel)).uid === 0);
    expect(rootOwned).toEqual([]);
  }, 1_200_000);
});
