/**
 * The held spool against the threat model of docs/permissions.md: on a managed install a member of the service
 * group — a real second uid, in its own process, racing in a tight loop — renames `pending_messages/` aside and
 * puts a link to another directory of the service uid in its place. Recovery (with its salvage of temp files),
 * the content listing, the stats and a real prune run as the service uid meanwhile; none of them may read,
 * create, rename or delete anything in the directory the link points at, and no message may be lost. A naive
 * recovery (every call by path) runs under the same race first: it must be hit, so the attack is shown to work
 * and the zero of the held spool means something.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ATTACKER, createTestUsers, describeNeeds, lastJson, type Proc, runAs as run, tempRoot, tree, type TestUsers } from '@hermes/test-utils';
import { fixture } from './helpers.js';

/** Rounds of the real victim: each flushes 3 messages, recovers, lists, takes stats and prunes. */
const ROUNDS = 200;
/** Rounds of the naive control (each writes one payload and recovers); up to five runs until it is hit. */
const CONTROL_ROUNDS = 2000;

const SESSION = { id: 'sess-attack', source: 'telegram', sessionKey: 'agent:main:telegram:dm:attack', startedAt: 1700000000 };
const DAY_S = 86_400;

type Codes = Record<string, number>;

interface LoopReport {
  rounds: number;
  flush: { ok: number; codes: Codes; notDurable: Codes };
  okTexts: string[];
  recovery: { passes: number; inserted: number; alreadyCommitted: number; adopted: number; kept: Codes; errors: Codes; foreign: number; bad: number };
  listing: { passes: number; entries: number; privateSeen: number; problems: Codes; codes: Codes };
  stats: { passes: number; codes: Codes };
  pruning: { passes: number; removed: number; codes: Codes };
  samples: Record<string, string>;
}

interface FinalReport {
  recovery: LoopReport['recovery'];
  messages: string[];
}

interface NaiveReport {
  rounds: number;
  inserted: number;
  privateRead: number;
  codes: Codes;
}

interface Layout {
  base: string;
  home: string;
  spool: string;
  /** The service uid's own directory outside the home (0700): what the attacker's link points at. */
  priv: string;
  stop: string;
  /** Every entry of `priv` as {@link contents} describes it, before the race. */
  before: Record<string, string>;
}

/** A payload as flushPending writes it (schema 1, two-space JSON), for `session`, with `text`. */
function payload(n: number, text: string, ts: number): string {
  return JSON.stringify(
    {
      schema_version: 1,
      kind: 'pending',
      ts,
      seq: n,
      pid: 4000000,
      process_id: '0123456789abcdef0123456789abcdef',
      session_key: SESSION.sessionKey,
      reason: 'shutdown',
      data: { text, session_id: SESSION.id },
    },
    null,
    2,
  );
}

/** An agent-history snapshot as flushAgentHistory writes it. */
function snapshot(n: number, text: string, ts: number): string {
  return JSON.stringify(
    {
      schema_version: 1,
      kind: 'agent_history',
      ts,
      seq: n,
      pid: 4000000,
      process_id: '0123456789abcdef0123456789abcdef',
      reason: 'shutdown-with-unpersisted-agent-history',
      issue: '#72680',
      session_id: SESSION.id,
      count: 1,
      messages: [{ role: 'user', content: text }],
    },
    null,
    2,
  );
}

/** `pending-<32 hex>.json`, distinct per tag and n. */
const payloadName = (tag: number, n: number): string => `pending-${tag.toString(16)}${n.toString(16).padStart(31, '0')}.json`;
/** fs-policy's temp name for `target` (`.<target>.<pid>.<12 hex>.tmp`, the pid of no process of this test). */
const tempName = (target: string, n: number): string => `.${target}.4000000.${n.toString(16).padStart(12, '0')}.tmp`;

/** Every entry below `dir` with its mode, owner, link count and bytes (base64): what "untouched" is measured on. */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of tree(dir)) {
    const p = path.join(dir, rel);
    const st = fs.lstatSync(p);
    const bytes = st.isFile() ? fs.readFileSync(p).toString('base64') : st.isDirectory() ? '<dir>' : '<other>';
    out[rel] = `${(st.mode & 0o7777).toString(8)} ${String(st.uid)} ${String(st.nlink)} ${bytes}`;
  }
  return out;
}

/** The `data.text` of every `*.json` payload directly in `dir` ([] when it does not exist). */
function textsIn(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .map((n) => (JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8')) as { data: { text: string } }).data.text);
}

const sum = (c: Codes): number => Object.values(c).reduce((a, b) => a + b, 0);

function untyped(...codes: Codes[]): string[] {
  return codes.flatMap((c) => Object.keys(c)).filter((c) => c.startsWith('UNTYPED'));
}

describeNeeds(['root', 'linux', 'useradd', 'mount'], 'the held spool attacked by a member of the service group (real second uid, own process, tight loop)', () => {
  let users: TestUsers;
  let mnt: string;
  let service: { uid: number; gid: number };
  let attacker: { uid: number; gid: number };
  let n = 0;

  beforeAll(() => {
    users = createTestUsers(2);
    service = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    attacker = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    // A tmpfs: fsync is cheap, and the home and the private directory share one filesystem, as on a real volume.
    mnt = path.join(tempRoot(), 'fs');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m,mode=0755', 'tmpfs', mnt]);
  });
  afterAll(() => {
    spawnSync('umount', ['-l', mnt]);
    users.cleanup();
  });

  const own = (p: string, mode: number): void => {
    fs.chownSync(p, service.uid, users.gid);
    fs.chmodSync(p, mode);
  };

  /**
   * A managed home (2770, service:group) with its spool (2770), a few complete payloads a killed writer left
   * under temp names in the spool (two hours old: salvage adopts them), and the service uid's private
   * directory outside the home: payloads, `.bad` files and snapshots ten days old (what a prune deletes), and
   * complete temp payloads (what a salvage adopts), every text marked PRIVATE.
   */
  function layout(): Layout & { temps: string[] } {
    const base = path.join(mnt, `case-${String(n++)}`);
    fs.mkdirSync(base, { mode: 0o755 });
    const home = path.join(base, 'home');
    fs.mkdirSync(home);
    own(home, 0o2770);
    const spool = path.join(home, 'pending_messages');
    fs.mkdirSync(spool);
    own(spool, 0o2770);
    const priv = path.join(base, 'private');
    fs.mkdirSync(priv);
    own(priv, 0o700);
    const now = Date.now() / 1000;
    const old = now - 10 * DAY_S;
    const put = (dir: string, name: string, text: string, mtime?: number): void => {
      const p = path.join(dir, name);
      fs.writeFileSync(p, text);
      own(p, 0o600);
      if (mtime !== undefined) fs.utimesSync(p, mtime, mtime);
    };
    for (let i = 0; i < 20; i++) put(priv, payloadName(0xa, i), payload(i, `PRIVATE-${String(i)}`, 1700000100 + i));
    for (let i = 0; i < 2; i++) put(priv, `${payloadName(0xb, i)}.bad`, payload(i, `PRIVATE-bad-${String(i)}`, old), old);
    for (let i = 0; i < 2; i++) put(priv, payloadName(0xc, i), snapshot(i, `PRIVATE-snapshot-${String(i)}`, old), old);
    for (let i = 0; i < 2; i++) put(priv, tempName(payloadName(0xd, i), i), payload(i, `PRIVATE-temp-${String(i)}`, now - 7200), now - 7200);
    const temps: string[] = [];
    for (let i = 0; i < 3; i++) {
      temps.push(`TEMP-${String(i)}`);
      put(spool, tempName(payloadName(0xe, i), i), payload(i, `TEMP-${String(i)}`, now - 7200), now - 7200);
    }
    expect(tree(priv)).toHaveLength(26);
    return { base, home, spool, priv, stop: path.join(base, 'stop'), before: contents(priv), temps };
  }

  /**
   * Runs the attacker (swap pending_messages/ for a link to the private directory) while `victim` runs; returns
   * the victim's run and the attacker's round count.
   */
  async function race(l: Layout, victim: { script: string; args: readonly string[] }): Promise<{ victim: Proc; rounds: number }> {
    const attackerRun = run(ATTACKER, ['swap', l.stop, '120000', l.home, 'pending_messages', l.priv], attacker, {}, 150_000);
    await new Promise((r) => setTimeout(r, 50)); // let the attacker get going
    let victimRun;
    try {
      // A victim that hangs is killed and fails the test.
      victimRun = await run(victim.script, victim.args, service, { HERMES_HOME: l.home, HERMES_MANAGED: 'nixos' }, 60_000);
    } finally {
      fs.writeFileSync(l.stop, '');
    }
    const attackerDone = await attackerRun;
    return { victim: victimRun, rounds: lastJson<{ rounds: number }>(attackerDone).rounds };
  }

  /** What changed in the private directory: names gone or changed, names added. */
  function escapes(l: Layout): { changed: string[]; added: string[] } {
    const after = contents(l.priv);
    return {
      changed: Object.keys(l.before).filter((k) => after[k] !== l.before[k]),
      added: Object.keys(after).filter((k) => !(k in l.before)),
    };
  }

  it(`recovery, salvage, listing, stats and prune in ${String(ROUNDS)} rounds against a spool swapped for a link: control escapes, held spool 0 escapes, nothing lost`, async () => {
    // Control: the same race against a recovery by path reads and deletes the private files.
    let control = { escapes: 0, privateRead: 0, changed: 0, added: 0, runs: 0 };
    for (let runNo = 1; runNo <= 5; runNo++) {
      const c = layout();
      const naive = lastJson<NaiveReport>((await race(c, { script: fixture('naive-recover.mjs'), args: [String(CONTROL_ROUNDS)] })).victim);
      const e = escapes(c);
      control = { escapes: e.changed.length + e.added.length + naive.privateRead, privateRead: naive.privateRead, changed: e.changed.length, added: e.added.length, runs: runNo };
      if (control.escapes > 0) break;
    }
    expect(control.escapes).toBeGreaterThan(0);

    const l = layout();
    const r = await race(l, { script: fixture('recover-loop.mjs'), args: [JSON.stringify({ mode: 'race', rounds: ROUNDS, session: SESSION })] });
    const v = lastJson<LoopReport>(r.victim);
    const e = escapes(l);
    // After the attacker stopped: one clean recovery, and every message in state.db.
    const aside = path.join(l.home, '.pending_messages.aside'); // where the attacker's last round may have left the spool
    const final = lastJson<FinalReport>(
      await run(fixture('recover-loop.mjs'), [JSON.stringify({ mode: 'final', session: SESSION })], service, { HERMES_HOME: l.home, HERMES_MANAGED: 'nixos' }, 60_000),
    );
    const inDb = new Set(final.messages);
    const onDisk = new Set([...textsIn(l.spool), ...textsIn(aside)]);
    const expected = [...v.okTexts, ...l.temps];
    const lost = expected.filter((t) => !inDb.has(t) && !onDisk.has(t));
    const twice = final.messages.filter((m, i) => final.messages.indexOf(m) !== i);

    console.log(
      `attack spool-swap: ${String(v.rounds)} rounds vs ${String(r.rounds)} attacker rounds; ` +
        `flushed ok ${String(v.flush.ok)} (directory fsync failed ${JSON.stringify(v.flush.notDurable)}), refused ${JSON.stringify(v.flush.codes)}; ` +
        `recovery: ${String(v.recovery.passes)} passes, inserted ${String(v.recovery.inserted)} (${String(v.recovery.adopted)} adopted from temp files), ` +
        `kept ${JSON.stringify(v.recovery.kept)}, refused ${JSON.stringify(v.recovery.errors)}; ` +
        `listing refused ${JSON.stringify(v.listing.codes)}, stats ${JSON.stringify(v.stats.codes)}, prune ${JSON.stringify(v.pruning.codes)}; ` +
        `after a clean pass: ${String(inDb.size)} messages in state.db, ${String(onDisk.size)} left on disk, lost ${String(lost.length)}; ` +
        `escapes: control ${String(control.escapes)} (run ${String(control.runs)}: ${String(control.privateRead)} private reads, ${String(control.changed)} private files deleted or changed, ${String(control.added)} added), ` +
        `held spool ${String(e.changed.length + e.added.length + v.listing.privateSeen)}`,
    );

    // Confidentiality and integrity of what lies outside the home: not one file read, changed, removed or added.
    expect(e).toEqual({ changed: [], added: [] });
    expect(v.listing.privateSeen).toBe(0);
    expect(v.pruning.removed).toBe(0); // the spool itself never holds a .bad file or a snapshot here
    expect(final.messages.filter((m) => m.includes('PRIVATE'))).toEqual([]);
    expect([...onDisk].filter((t) => t.includes('PRIVATE'))).toEqual([]);
    // Every refusal typed; every flush accounted for; every recovery ran to its report (never a throw).
    const codes = [v.flush.codes, v.flush.notDurable, v.recovery.errors, v.listing.codes, v.stats.codes, v.pruning.codes];
    expect(untyped(...codes, final.recovery.errors), JSON.stringify(v.samples)).toEqual([]);
    expect(v.flush.ok + sum(v.flush.codes)).toBe(ROUNDS * 3);
    expect(v.recovery.passes).toBe(ROUNDS);
    // The race reached the victim (operations refused while the link was in place), and work still got done.
    expect(codes.map(sum).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(v.flush.ok).toBeGreaterThan(0);
    expect(v.recovery.inserted).toBeGreaterThan(0);
    // Nothing lost, nothing twice: every message whose flush succeeded (and every complete temp payload) is in
    // state.db, or still on disk in the home.
    expect(lost).toEqual([]);
    expect(twice).toEqual([]);
    expect(final.recovery.errors).toEqual({});
  }, 300_000);
});
