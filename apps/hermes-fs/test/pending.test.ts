import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { createTestUsers, describeNeeds, itNeeds, runNode } from '@hermes/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpoolEntry } from '../src/pending/spool.js';
import { ANSI, BIN, cli, cliJson, fixture, freshHome, modeOf, seedHome, snapshotTree, type SeedResult, cleanupHomes } from './helpers.js';

afterAll(cleanupHomes);

interface ListJson {
  readonly dir: string;
  readonly exists: boolean;
  readonly entries: SpoolEntry[];
}

interface RecoverJson {
  readonly ok: boolean;
  readonly report: {
    scanned: number;
    inserted: { path: string; sessionId: string }[];
    alreadyCommitted: unknown[];
    kept: { path: string; reason: string }[];
    bad: { path: string; badPath: string; error: string }[];
    snapshots: { path: string }[];
    foreignOwner: { path: string; uid: number }[];
    errors: unknown[];
  };
}

const id = (p: string | undefined): string => /pending-([0-9a-f]{32})\.json/.exec(p ?? '')?.[1] ?? 'missing';

function extraSpool(home: string, sessionId: string): { snapshot: string; unresolved: string; rejected: string } {
  const r = runNode(fixture('spool-extra.mjs'), [home, sessionId], { env: { HERMES_HOME: home } });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout.trim()) as { snapshot: string; unresolved: string; rejected: string };
}

function messagesOf(home: string, sessionId: string): string[] {
  const db = openSessionDb({ home, readonly: true });
  try {
    return (db.exportSession(sessionId)?.messages ?? []).map((m) => String(m.content));
  } finally {
    db.close();
  }
}

describe('hermes-fs pending: the salvage flow on a real spool and state.db', () => {
  let home: string;
  let seed: SeedResult;
  let extra: ReturnType<typeof extraSpool>;

  beforeAll(() => {
    home = freshHome();
    seed = seedHome(home);
    extra = extraSpool(home, seed.sessionId);
  });

  it('list: every file with its status, in recovery order', () => {
    const { run, json } = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(run.status).toBe(0);
    const rows = json.entries.map((e) => [e.id, e.status, e.kind, e.sessionId ?? e.sessionKey, e.mode]);
    expect(rows).toEqual([
      [id(seed.payload), 'payload', 'pending', seed.sessionId, '0600'],
      [id(extra.snapshot), 'snapshot', 'agent_history', seed.sessionId, '0600'],
      [id(extra.unresolved), 'payload', 'pending', 'agent:main:telegram:dm:999', '0600'],
      [id(extra.rejected), 'payload', 'transcript_cap_drop', seed.sessionId, '0600'],
    ]);
    const text = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1' } });
    expect(text.stdout).not.toMatch(ANSI);
    expect(text.stdout).toContain(id(seed.payload).slice(0, 12));
    expect(text.stdout).toContain('4 files in');
    expect(text.stdout).toContain('3 payloads, 1 agent-history snapshot, 0 .bad');
  });

  it('show: one payload by id prefix, with its full content', () => {
    const { run, json } = cliJson<{ entry: SpoolEntry; payload: { data: { text: string } } }>([
      'pending', 'show', id(seed.payload).slice(0, 8), '--home', home,
    ]);
    expect(run.status).toBe(0);
    expect(json.entry.path).toBe(seed.payload);
    expect(json.payload.data.text).toBe('undelivered at shutdown');
    const text = cli(['pending', 'show', id(extra.snapshot).slice(0, 6), '--home', home]);
    expect(text.stdout).toContain('status   snapshot (agent_history)');
    expect(text.stdout).toContain('please keep this conversation');
  });

  it('show: an unknown id is exit 2 with a hint', () => {
    const r = cli(['pending', 'show', 'ffffffff', '--home', home]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('hermes-fs: error: no spool file ffffffff in');
    expect(r.stderr).toContain('hint: list the ids with: hermes-fs pending list');
  });

  it('recover: replays into state.db, renames the rejected row .bad, leaves the snapshot and the unresolved payload', () => {
    const { run, json } = cliJson<RecoverJson>(['pending', 'recover', '--home', home]);
    expect(json.report.inserted.map((e) => [e.path, e.sessionId])).toEqual([[seed.payload, seed.sessionId]]);
    expect(json.report.snapshots.map((s) => s.path)).toEqual([extra.snapshot]);
    expect(json.report.kept.map((k) => [k.path, k.reason])).toEqual([[extra.unresolved, 'unresolved']]);
    expect(json.report.bad.map((b) => b.badPath)).toEqual([`${extra.rejected}.bad`]);
    expect(json.ok).toBe(false);
    expect(run.status).toBe(1); // a .bad file is a finding for the operator
    expect(fs.existsSync(seed.payload)).toBe(false);
    expect(modeOf(`${extra.rejected}.bad`)).toBe('0600');
    expect(messagesOf(home, seed.sessionId)).toEqual(['hello from the seed', 'hello back', 'undelivered at shutdown']);
  });

  it('recover again: exactly once (nothing duplicated), exit 0', () => {
    const { run, json } = cliJson<RecoverJson>(['pending', 'recover', '--home', home]);
    expect(json.report.inserted).toEqual([]);
    expect(json.report.bad).toEqual([]);
    expect(run.status).toBe(0);
    expect(messagesOf(home, seed.sessionId)).toEqual(['hello from the seed', 'hello back', 'undelivered at shutdown']);
  });

  it('list after recovery shows the .bad file and the snapshot', () => {
    const { json } = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(json.entries.map((e) => [e.name, e.status])).toEqual([
      [path.basename(extra.snapshot), 'snapshot'],
      [path.basename(extra.unresolved), 'payload'],
      [`${path.basename(extra.rejected)}.bad`, 'bad'],
    ]);
  });

  it('export: an agent-history snapshot becomes a readable 0600 transcript through @hermes/cli', () => {
    const r = cliJson<{ ok: boolean; path: string; format: string; mode: string; messages: number }>([
      'pending', 'export', id(extra.snapshot).slice(0, 10), '--format', 'md', '--home', home,
    ]);
    expect(r.run.status).toBe(0);
    expect(r.json).toMatchObject({ ok: true, format: 'md', mode: '0600', messages: 2 });
    expect(path.dirname(r.json.path)).toBe(path.join(home, 'sessions', 'saved'));
    expect(modeOf(r.json.path)).toBe('0600');
    const md = fs.readFileSync(r.json.path, 'utf8');
    expect(md).toContain('please keep this conversation');
    const html = cli(['pending', 'export', id(extra.snapshot), '--format', 'html', '--stdout', '--home', home]);
    expect(html.status).toBe(0);
    expect(html.stdout).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html.stdout).not.toContain('<script>alert(1)</script>');
    const text = cli(['pending', 'export', id(extra.snapshot), '--home', home], { env: { NO_COLOR: '1' } });
    expect(text.stdout).toMatch(/^\(\^_\^\)v Conversation saved to: .*\.md \(Markdown\)$/m);
  });

  it('export: a payload that is not an agent-history snapshot is refused (exit 2)', () => {
    const r = cli(['pending', 'export', id(extra.unresolved), '--home', home]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('is a pending payload, not an agent-history snapshot');
  });

  it('prune --dry-run lists and deletes nothing; prune deletes .bad and snapshots but never a payload', () => {
    const before = snapshotTree(home);
    const dry = cliJson<{ matched: { path: string; category: string }[]; removed: string[] }>([
      'pending', 'prune', '--older-than', '0', '--dry-run', '--home', home,
    ]);
    expect(dry.json.matched.map((m) => [m.path, m.category]).sort()).toEqual(
      [[`${extra.rejected}.bad`, 'bad'], [extra.snapshot, 'snapshots']].sort(),
    );
    expect(dry.json.removed).toEqual([]);
    expect(snapshotTree(home)).toEqual(before);
    // With the retention defaults (30 days) nothing this fresh goes.
    const keep = cliJson<{ removed: string[] }>(['pending', 'prune', '--home', home]);
    expect(keep.json.removed).toEqual([]);
    const real = cliJson<{ removed: string[] }>(['pending', 'prune', '--older-than', '0', '--home', home]);
    expect(real.run.status).toBe(0);
    expect(real.json.removed.sort()).toEqual([`${extra.rejected}.bad`, extra.snapshot].sort());
    const after = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(after.json.entries.map((e) => e.path)).toEqual([extra.unresolved]);
  });

  it('prune rejects a negative --older-than (exit 2)', () => {
    const r = cli(['pending', 'prune', '--older-than', '-1', '--home', home]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('expected a number of days >= 0');
  });
});

describe('hermes-fs pending recover: large spools', () => {
  itNeeds(['script'], 'recovers 1,200 payloads; the progress bar appears only on a TTY (stderr), never in pipes', () => {
    const home = freshHome();
    const seed = seedHome(home);
    const key = 'agent:main:telegram:dm:42';
    const bulk = runNode(fixture('spool-bulk.mjs'), [home, key, '1200'], { env: { HERMES_HOME: home } });
    expect(bulk.status).toBe(0);
    const piped = cli(['pending', 'recover', '--home', home]);
    expect(piped.status).toBe(0);
    expect(piped.stderr).toBe('');
    expect(piped.stdout).toContain('recovered 1201 of 1201 spool files');
    expect(messagesOf(home, seed.sessionId)).toHaveLength(2 + 1201);

    // The same on a pseudo-terminal (util-linux script): the bar is drawn on stderr.
    const home2 = freshHome();
    seedHome(home2);
    expect(runNode(fixture('spool-bulk.mjs'), [home2, key, '1200'], { env: { HERMES_HOME: home2 } }).status).toBe(0);
    const tty = spawnSync('script', ['-qec', `${process.execPath} ${BIN} pending recover --home ${home2}`, '/dev/null'], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', HERMES_HOME: undefined },
    });
    expect(tty.status).toBe(0);
    expect(tty.stdout).toMatch(/recovering \[=+\] 1201\/1201 files/);
    expect(tty.stdout).toContain('recovered 1201 of 1201 spool files');
  });
});

describeNeeds(['root', 'useradd'], 'hermes-fs pending: each uid recovers its own (managed home, two real uids)', () => {
  it("uid B's recovery leaves uid A's 0600 payload in place and says whose it is", () => {
    const users = createTestUsers(2);
    try {
      const [a, b] = users.users;
      if (a === undefined || b === undefined) throw new Error('no users');
      const home = freshHome();
      fs.chmodSync(path.dirname(home), 0o755);
      fs.mkdirSync(home);
      fs.chownSync(home, a.uid, users.gid);
      fs.chmodSync(home, 0o2770);
      for (const d of ['cron', 'sessions', 'logs', 'memories']) {
        fs.mkdirSync(path.join(home, d));
        fs.chownSync(path.join(home, d), a.uid, users.gid);
        fs.chmodSync(path.join(home, d), 0o2770);
      }
      const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
      const seeded = runNode(fixture('seed-home.mjs'), [home], { umask: 0o007, env, uid: a.uid, gid: users.gid });
      expect(seeded.status, seeded.stderr).toBe(0);
      const payload = (JSON.parse(seeded.stdout.trim()) as SeedResult).payload;
      expect(modeOf(payload)).toBe('0600');
      const list = runNode(BIN, ['pending', 'list', '--home', home, '--json'], { umask: 0o007, env, uid: b.uid, gid: users.gid });
      const entries = (JSON.parse(list.stdout) as ListJson).entries;
      expect(entries.map((e) => [e.path, e.status, e.uid])).toEqual([[payload, 'foreign', a.uid]]);
      const rec = runNode(BIN, ['pending', 'recover', '--home', home, '--json'], { umask: 0o007, env, uid: b.uid, gid: users.gid });
      const report = (JSON.parse(rec.stdout) as RecoverJson).report;
      expect(report.foreignOwner).toEqual([{ path: payload, uid: a.uid }]);
      expect(report.inserted).toEqual([]);
      expect(fs.existsSync(payload)).toBe(true);
      const own = runNode(BIN, ['pending', 'recover', '--home', home, '--json'], { umask: 0o007, env, uid: a.uid, gid: users.gid });
      expect((JSON.parse(own.stdout) as RecoverJson).report.inserted.map((e) => e.path)).toEqual([payload]);
    } finally {
      users.cleanup();
    }
  });
});
