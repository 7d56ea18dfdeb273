import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { flushAgentHistory } from '@hermes/gateway';
import { openSessionDb } from '@hermes/session-db';
import { createTestUsers, describeNeeds, itNeeds, runNode } from '@hermes/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../src/lib/term.js';
import { BIN, cli, cliJson, cleanupHomes, fixture, freshHome, modeOf, seedHome, snapshotTree, spoolBulk, type SeedResult } from './helpers.js';

afterAll(cleanupHomes);

/** An entry of `pending list --json` / `pending show --json` (the gateway's names). */
interface Entry {
  readonly id: string;
  readonly name: string;
  readonly path: string;
  readonly kind: string;
  readonly payloadKind: string | null;
  readonly problem: string | null;
  readonly fileType: string;
  readonly mode: number;
  readonly uid: number;
  readonly messages: number | null;
  readonly time: number;
  readonly content: { sessionKey: string | null; sessionId: string | null; text: string | null } | null;
}

interface ListJson {
  readonly ok: boolean;
  readonly dir: string;
  readonly exists: boolean;
  readonly order: string;
  readonly limit: number | null;
  readonly entries: Entry[];
  readonly totals: { files: number; toDeliver: number; kinds: Record<string, number>; problems: Record<string, number> };
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
  } | null;
}

const id = (p: string | undefined): string => /pending-([0-9a-f]{32})\.json/.exec(p ?? '')?.[1] ?? 'missing';

function extraSpool(home: string, sessionId: string): { snapshot: string; unresolved: string; rejected: string } {
  const r = runNode(fixture('spool-extra.mjs'), [home, sessionId], { env: { HERMES_HOME: home } });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout.trim()) as { snapshot: string; unresolved: string; rejected: string };
}

function rawSpool(home: string, n: number): void {
  const r = runNode(fixture('spool-raw.mjs'), [home, String(n)], { timeoutMs: 120_000 });
  if (r.status !== 0) throw new Error(r.stderr);
}

function messagesOf(home: string, sessionId: string): string[] {
  const db = openSessionDb({ home, readonly: true });
  try {
    return (db.exportSession(sessionId)?.messages ?? []).map((m) => String(m.content));
  } finally {
    db.close();
  }
}

/** Every line of a text output fits `width` terminal columns. */
function widest(text: string): number {
  return Math.max(...text.split('\n').map((l) => displayWidth(l)));
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

  it('list --json: every file with the gateway\'s names for its kind, and totals', () => {
    const { run, json } = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(run.status, run.stderr).toBe(0);
    expect(json).toMatchObject({ ok: true, exists: true, order: 'scan', limit: null });
    const rows = [...json.entries]
      .sort((a, b) => a.time - b.time || a.name.localeCompare(b.name))
      .map((e) => [e.id, e.kind, e.payloadKind, e.content?.sessionId ?? e.content?.sessionKey, e.mode]);
    expect(rows.sort()).toEqual(
      [
        [id(seed.payload), 'pending', 'pending', seed.sessionId, 0o600],
        [id(extra.snapshot), 'agent-history', 'agent_history', seed.sessionId, 0o600],
        [id(extra.unresolved), 'pending', 'pending', 'agent:main:telegram:dm:999', 0o600],
        [id(extra.rejected), 'cap-drop', 'transcript_cap_drop', seed.sessionId, 0o600],
      ].sort(),
    );
    expect(json.totals).toMatchObject({ files: 4, toDeliver: 3, kinds: { pending: 2, overflow: 0, 'cap-drop': 1, 'agent-history': 1, bad: 0, unknown: 0 } });
  });

  it('list: a table within 80 columns, the newest rows last, "1 message" in the singular', () => {
    const text = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1' } });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain(id(seed.payload).slice(0, 8));
    expect(text.stdout).toContain('2 messages');
    expect(widest(text.stdout)).toBeLessThanOrEqual(80);
    // Wider than 80 only when the terminal (here $COLUMNS) is.
    const wide = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1', COLUMNS: '200' } });
    expect(wide.stdout).toContain(`4 files in ${path.join(home, 'pending_messages')}: 3 to deliver, 1 agent-history snapshot, 0 .bad`);
    expect(wide.stdout).toContain('│ undelivered at shutdown │');
    const limited = cli(['pending', 'list', '--limit', '2', '--home', home], { env: { NO_COLOR: '1' } });
    expect(limited.stdout).toContain('showing the newest 2 of 4 spool files');
    expect(limited.stdout.split('\n').filter((l) => /^│ [0-9a-f]{8} /.test(l))).toHaveLength(2);
  });

  it('show: one payload by id prefix, with its full content', () => {
    const { run, json } = cliJson<{ entry: Entry; payload: { data: { text: string } } }>(['pending', 'show', id(seed.payload).slice(0, 8), '--home', home]);
    expect(run.status, run.stderr).toBe(0);
    expect(json.entry.path).toBe(seed.payload);
    expect(json.payload.data.text).toBe('undelivered at shutdown');
    const text = cli(['pending', 'show', id(extra.snapshot).slice(0, 6), '--home', home], { env: { NO_COLOR: '1' } });
    expect(text.stdout).toContain('kind     agent-history (agent_history)');
    expect(text.stdout).toContain('please keep this conversation');
  });

  it('show: an unknown id is exit 2 with a hint (and the error document with --json)', () => {
    const r = cli(['pending', 'show', 'ffffffff', '--home', home]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain('hermes-fs: error: no spool file ffffffff in');
    expect(r.stderr).toContain('hint: list the ids with: hermes-fs pending list');
    const j = cliJson<{ ok: boolean; error: { code: string; path: string } }>(['pending', 'show', 'ffffffff', '--home', home]);
    expect(j.run.status, j.run.stderr).toBe(2);
    expect(j.json).toMatchObject({ ok: false, error: { code: 'ENOTFOUND', path: path.join(home, 'pending_messages') } });
  });

  it('recover: replays into state.db, renames the rejected row .bad, leaves the snapshot and the unresolved payload', () => {
    const { run, json } = cliJson<RecoverJson>(['pending', 'recover', '--home', home]);
    expect(json.report?.inserted.map((e) => [e.path, e.sessionId])).toEqual([[seed.payload, seed.sessionId]]);
    expect(json.report?.snapshots.map((s) => s.path)).toEqual([extra.snapshot]);
    expect(json.report?.kept.map((k) => [k.path, k.reason])).toEqual([[extra.unresolved, 'unresolved']]);
    expect(json.report?.bad.map((b) => b.badPath)).toEqual([`${extra.rejected}.bad`]);
    expect(json.ok).toBe(false);
    expect(run.status, run.stderr).toBe(1); // a .bad file is a finding for the operator
    expect(fs.existsSync(seed.payload)).toBe(false);
    expect(modeOf(`${extra.rejected}.bad`)).toBe('0600');
    expect(messagesOf(home, seed.sessionId)).toEqual(['hello from the seed', 'hello back', 'undelivered at shutdown']);
  });

  it('recover again: exactly once (nothing duplicated), exit 0', () => {
    const { run, json } = cliJson<RecoverJson>(['pending', 'recover', '--home', home]);
    expect(json.report?.inserted).toEqual([]);
    expect(json.report?.bad).toEqual([]);
    expect(run.status, run.stderr).toBe(0);
    expect(messagesOf(home, seed.sessionId)).toEqual(['hello from the seed', 'hello back', 'undelivered at shutdown']);
  });

  it('list after recovery shows the .bad file and the snapshot', () => {
    const { json } = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(json.entries.map((e) => [e.name, e.kind]).sort()).toEqual(
      [
        [path.basename(extra.snapshot), 'agent-history'],
        [path.basename(extra.unresolved), 'pending'],
        [`${path.basename(extra.rejected)}.bad`, 'bad'],
      ].sort(),
    );
  });

  it('export: an agent-history snapshot becomes a readable 0600 transcript through @hermes/cli', () => {
    const r = cliJson<{ ok: boolean; path: string; format: string; mode: string; messages: number }>([
      'pending', 'export', id(extra.snapshot).slice(0, 10), '--format', 'md', '--home', home,
    ]);
    expect(r.run.status, r.run.stderr).toBe(0);
    expect(r.json).toMatchObject({ ok: true, format: 'md', mode: '0600', messages: 2 });
    expect(path.dirname(r.json.path)).toBe(path.join(home, 'sessions', 'saved'));
    expect(modeOf(r.json.path)).toBe('0600');
    expect(fs.readFileSync(r.json.path, 'utf8')).toContain('please keep this conversation');
    const html = cli(['pending', 'export', id(extra.snapshot), '--format', 'html', '--stdout', '--home', home]);
    expect(html.status, html.stderr).toBe(0);
    expect(html.stdout).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html.stdout).not.toContain('<script>alert(1)</script>');
    const text = cli(['pending', 'export', id(extra.snapshot), '--home', home], { env: { NO_COLOR: '1' } });
    expect(text.stdout).toMatch(/^\(\^_\^\)v Conversation saved to: .*\.md \(Markdown\)$/m);
  });

  it('export: --output decides the format; a disagreeing --format or an unknown extension is a usage error', () => {
    const named = cliJson<{ path: string; format: string }>(['pending', 'export', id(extra.snapshot), '--output', 'salvaged.html', '--home', home]);
    expect(named.json).toMatchObject({ format: 'html', path: path.join(home, 'sessions', 'saved', 'salvaged.html') });
    for (const args of [['--output', 'x.pdf'], ['--output', 'x.md', '--format', 'json']]) {
      const r = cli(['pending', 'export', id(extra.snapshot), ...args, '--home', home]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(fs.existsSync(path.join(home, 'sessions', 'saved', 'x.pdf'))).toBe(false);
    }
  });

  it('export: a snapshot whose messages include non-object entries (the reference\'s str(obj)) exports them as text', async () => {
    const r = await flushAgentHistory('sess-str', [
      { role: 'user', content: 'the question' },
      "ChatCompletionMessage(content='the answer', role='assistant')",
      42,
    ], { home });
    expect(r.failed).toEqual([]);
    const file = r.written[0]?.path ?? '';
    const out = cli(['pending', 'export', id(file), '--format', 'md', '--stdout', '--home', home]);
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toContain('the question');
    expect(out.stdout).toContain("ChatCompletionMessage(content='the answer', role='assistant')");
    expect(out.stdout).toContain('42');
    fs.rmSync(file);
  });

  it('export: a payload that is not an agent-history snapshot is refused (exit 2)', () => {
    const r = cli(['pending', 'export', id(extra.unresolved), '--home', home]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain('is a pending payload, not an agent-history snapshot');
  });

  it('prune without --yes changes nothing; --yes deletes .bad files and snapshots but never a payload', () => {
    const before = snapshotTree(home);
    for (const args of [['--older-than', '0'], ['--older-than', '0', '--dry-run'], []]) {
      const dry = cliJson<{ dryRun: boolean; matched: { path: string; category: string }[]; removed: string[] }>(['pending', 'prune', ...args, '--home', home]);
      expect(dry.run.status, args.join(' ')).toBe(0);
      expect(dry.json.dryRun).toBe(true);
      expect(dry.json.removed).toEqual([]);
      expect(snapshotTree(home), args.join(' ')).toEqual(before);
    }
    const text = cli(['pending', 'prune', '--older-than', '0', '--home', home], { env: { NO_COLOR: '1' } });
    expect(text.stdout).toContain('dry run: would delete 2 spool files');
    expect(text.stdout).toContain('run again with --yes to delete them');
    expect(snapshotTree(home)).toEqual(before);
    // With the retention defaults (30 days) nothing this fresh goes, even with --yes.
    expect(cliJson<{ removed: string[] }>(['pending', 'prune', '--yes', '--home', home]).json.removed).toEqual([]);
    const real = cliJson<{ dryRun: boolean; removed: string[] }>(['pending', 'prune', '--older-than', '0', '--yes', '--home', home]);
    expect(real.run.status, real.run.stderr).toBe(0);
    expect(real.json.dryRun).toBe(false);
    expect(real.json.removed.sort()).toEqual([`${extra.rejected}.bad`, extra.snapshot].sort());
    expect(cliJson<ListJson>(['pending', 'list', '--home', home]).json.entries.map((e) => e.path)).toEqual([extra.unresolved]);
  });

  it('prune: --yes with --dry-run, or a negative --older-than, is a usage error (exit 2)', () => {
    expect(cli(['pending', 'prune', '--yes', '--dry-run', '--home', home]).status).toBe(2);
    const r = cli(['pending', 'prune', '--older-than', '-1', '--home', home]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain('expected a number of days >= 0');
  });
});

describe('hermes-fs pending: what a sender or a group member put there', () => {
  it('a preview and a key carrying escape sequences, CR, LF and NUL are printed escaped; --json keeps them exact', () => {
    const home = freshHome();
    const r = runNode(fixture('spool-hostile.mjs'), [home], { env: { HERMES_HOME: home } });
    expect(r.status, r.stderr).toBe(0);
    const planted = JSON.parse(r.stdout) as { path: string; text: string; key: string };
    // COLUMNS wide enough that the preview is not cut: all of it must show, escaped.
    const list = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1', COLUMNS: '400' } });
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout).toContain('hi \\x1b]0;pwned\\x07 \\x1b[2J wiped\\r\\nnext\\x00nul \\x9b31m \\u{202e}gnp.exe');
    expect(list.stdout).toContain('agent:main:telegram:dm:\\x1b[31mred');
    for (const raw of ['\u001b', '\r', '\u0000', '\u0007', '\u009b', '\u202e']) expect(list.stdout).not.toContain(raw);

    const show = cli(['pending', 'show', id(planted.path), '--home', home], { env: { NO_COLOR: '1' } });
    expect(show.status, show.stderr).toBe(0);
    expect(show.stdout).toContain('key      agent:main:telegram:dm:\\x1b[31mred');
    expect(show.stdout).toContain('"text": "hi \\u001b]0;pwned\\u0007 \\u001b[2J wiped\\r\\nnext\\u0000nul \\u009b31m \\u202egnp.exe"');
    for (const raw of ['\u001b', '\r', '\u0000', '\u0007', '\u009b', '\u202e']) expect(show.stdout).not.toContain(raw);

    const json = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(json.json.entries[0]?.content).toEqual({ sessionKey: planted.key, sessionId: null, text: planted.text, textLength: planted.text.length });
    const shown = cliJson<{ payload: { session_key: string; data: { text: string } } }>(['pending', 'show', id(planted.path), '--home', home]);
    expect(shown.json.payload.data.text).toBe(planted.text);
  });

  it('symlinks, FIFOs and directories named pending-*.json are listed (never opened) and counted as recovery counts them', () => {
    const home = freshHome();
    const seed = seedHome(home);
    const dir = path.join(home, 'pending_messages');
    const outside = path.join(path.dirname(home), 'outside.json');
    fs.writeFileSync(outside, JSON.stringify({ session_key: 'k', data: { text: 'not in the spool' } }));
    fs.symlinkSync(outside, path.join(dir, `pending-${'a'.repeat(32)}.json`));
    expect(spawnSync('mkfifo', [path.join(dir, `pending-${'b'.repeat(32)}.json`)]).status).toBe(0);
    fs.mkdirSync(path.join(dir, `pending-${'c'.repeat(32)}.json`));
    // A FIFO opened for reading would block the CLI until the test's timeout.
    const { run, json } = cliJson<ListJson>(['pending', 'list', '--home', home], { timeoutMs: 30_000 });
    expect(run.status, run.stderr).toBe(0);
    const odd = json.entries.filter((e) => e.problem === 'not-a-regular-file').map((e) => [e.id, e.fileType]);
    expect(odd.sort()).toEqual([['a'.repeat(32), 'symlink'], ['b'.repeat(32), 'fifo'], ['c'.repeat(32), 'directory']]);
    expect(json.totals.problems['not-a-regular-file']).toBe(3);
    expect(JSON.stringify(json)).not.toContain('not in the spool');
    const text = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1', COLUMNS: '200' }, timeoutMs: 30_000 });
    expect(text.stdout).toContain('symbolic link: never followed');
    expect(text.stdout).toContain('fifo: never opened');
    expect(text.stdout).toContain('3 non-regular files');
    const rec = cliJson<RecoverJson>(['pending', 'recover', '--home', home], { timeoutMs: 30_000 });
    expect(rec.json.report?.scanned).toBe(4);
    expect(rec.json.report?.inserted.map((e) => e.path)).toEqual([seed.payload]);
    expect(rec.json.report?.kept.map((k) => k.reason)).toEqual(['not-a-regular-file', 'not-a-regular-file', 'not-a-regular-file']);
  });
});

describe('hermes-fs pending list: a large spool', () => {
  let home: string;

  beforeAll(() => {
    home = freshHome();
    fs.mkdirSync(home);
    rawSpool(home, 20_000);
  });

  it('shows the newest 50 with totals for all 20,000', () => {
    const r = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1' } });
    expect(r.status, r.stderr).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => /^│ [0-9a-f]{8} /.test(l));
    expect(rows).toHaveLength(50);
    expect(rows[0]).toContain('message 19950');
    expect(rows[49]).toContain('message 19999');
    expect(r.stdout).toContain('showing the newest 50 of 20,000 spool files');
    expect(r.stdout).toContain('20,000 files in');
    expect(widest(r.stdout)).toBeLessThanOrEqual(80);
  });

  it('--json streams: the whole document under a 10 MiB heap, with a reader slower than the writer', () => {
    // The CLI's modules take about 7 MiB of old space before the listing starts; the 20,000-entry document is
    // about 12 MB as one string (a bare process cannot even JSON.parse it under this limit), so holding the
    // document or the listing would pass it. (At 8 MiB the headroom was 1 MiB, and a busy machine's later garbage
    // collection ran past it.)
    const r = spawnSync('/bin/sh', ['-c', `"$0" --max-old-space-size=10 "$1" pending list --json --home "$2" | (sleep 1; cat)`, process.execPath, BIN, home], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      timeout: 120_000,
    });
    expect(r.stderr).toBe('');
    const doc = JSON.parse(r.stdout) as ListJson;
    expect(doc.ok).toBe(true);
    expect(doc.entries).toHaveLength(20_000);
    expect(doc.totals.files).toBe(20_000);
    expect(new Set(doc.entries.map((e) => e.id)).size).toBe(20_000);
  });

  it('--json --limit 3: the newest three in recovery order', () => {
    const { json } = cliJson<ListJson>(['pending', 'list', '--limit', '3', '--home', home]);
    expect(json).toMatchObject({ order: 'recovery', limit: 3 });
    expect(json.entries.map((e) => e.content?.text)).toEqual(['message 19997', 'message 19998', 'message 19999']);
    expect(json.totals.files).toBe(20_000);
  });

  it('`| head -1` ends quietly with exit 0: table, --all and --json', () => {
    for (const args of [[], ['--all'], ['--json']]) {
      const r = spawnSync('bash', ['-c', `"$0" "$1" pending list --home "$2" ${args.join(' ')} | head -1; echo "status=\${PIPESTATUS[0]}" >&2`, process.execPath, BIN, home], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(r.stdout.split('\n').filter((l) => l !== '')).toHaveLength(1);
      expect(r.stderr, args.join(' ')).toBe('status=0\n');
    }
  });
});

describe('hermes-fs pending recover', () => {
  itNeeds(['script'], 'recovers 1,200 payloads; the progress bar appears only on a TTY (stderr), never in pipes', () => {
    const home = freshHome();
    const seed = seedHome(home);
    const key = 'agent:main:telegram:dm:42';
    spoolBulk(home, key, 1_200);
    const piped = cli(['pending', 'recover', '--home', home]);
    expect(piped.status, piped.stderr).toBe(0);
    expect(piped.stderr).toBe('');
    expect(piped.stdout).toContain('recovered 1,201 of 1,201 spool files');
    expect(messagesOf(home, seed.sessionId)).toHaveLength(2 + 1201);

    const home2 = freshHome();
    seedHome(home2);
    spoolBulk(home2, key, 1_200);
    const tty = spawnSync('script', ['-qec', `${process.execPath} ${BIN} pending recover --home ${home2}`, '/dev/null'], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', HERMES_HOME: undefined },
    });
    expect(tty.status, tty.stderr).toBe(0);
    expect(tty.stdout).toMatch(/recovering \[=+\] 1,201\/1,201 files · [\d,]+ files\/s · ETA 0s/);
    expect(tty.stdout).toContain('recovered 1,201 of 1,201 spool files');
  });

  it('refuses a missing state.db (exit 2, names --create-db) and creates nothing; --create-db creates it', () => {
    const home = freshHome();
    fs.mkdirSync(home);
    rawSpool(home, 3);
    const before = snapshotTree(home);
    const r = cli(['pending', 'recover', '--home', home]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`no session database at ${path.join(home, 'state.db')}`);
    expect(r.stderr).toContain('--create-db');
    const j = cliJson<{ ok: boolean; error: { code: string; path: string; hint: string } }>(['pending', 'recover', '--home', home]);
    expect(j.run.status, j.run.stderr).toBe(2);
    expect(j.json).toMatchObject({ ok: false, error: { code: 'ENODB', path: path.join(home, 'state.db') } });
    expect(j.json.error.hint).toContain('--create-db');
    expect(snapshotTree(home)).toEqual(before);

    const created = cliJson<RecoverJson & { createdDb: boolean }>(['pending', 'recover', '--create-db', '--home', home]);
    expect(created.json.createdDb).toBe(true);
    expect(created.json.report?.kept.map((k) => k.reason)).toEqual(['unresolved', 'unresolved', 'unresolved']);
    expect(modeOf(path.join(home, 'state.db'))).toBe('0600');
    expect(fs.lstatSync(path.join(home, 'state.db')).uid).toBe(process.geteuid?.());
  });

  it('an empty or absent spool needs no state.db: nothing to recover, exit 0', () => {
    const home = freshHome();
    fs.mkdirSync(home);
    const r = cli(['pending', 'recover', '--home', home]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('nothing to recover');
    expect(fs.readdirSync(home)).toEqual([]);
  });
});

describeNeeds(['root', 'useradd'], 'hermes-fs pending as root in a home another uid owns (real users)', () => {
  /** A managed home as the NixOS module lays it out, owned by `uid`, group `gid`. */
  function managedHome(uid: number, gid: number): string {
    const home = freshHome();
    fs.chmodSync(path.dirname(home), 0o755);
    fs.mkdirSync(home);
    fs.chownSync(home, uid, gid);
    fs.chmodSync(home, 0o2770);
    for (const d of ['cron', 'sessions', 'logs', 'memories']) {
      fs.mkdirSync(path.join(home, d));
      fs.chownSync(path.join(home, d), uid, gid);
      fs.chmodSync(path.join(home, d), 0o2770);
    }
    return home;
  }

  it('recover --create-db never creates a root-owned state.db: owned by the owner in a managed and in an unmanaged home', () => {
    const users = createTestUsers(1);
    try {
      const [a] = users.users;
      if (a === undefined) throw new Error('no user');
      const managed = managedHome(a.uid, users.gid);
      const env = { HERMES_HOME: managed, HERMES_MANAGED: 'nixos' };
      const flushed = runNode(fixture('spool-bulk.mjs'), [managed, 'agent:main:telegram:dm:7', '2'], { umask: 0o007, env, uid: a.uid, gid: users.gid });
      expect(flushed.status, flushed.stderr).toBe(0);
      // Root acts as the home's owner (docs/acting-uid.md): the managed home's state.db is created by its owner.
      const asOwner = cliJson<{ createdDb: boolean }>(['pending', 'recover', '--create-db', '--home', managed], { env: { HERMES_MANAGED: 'nixos' } });
      expect(asOwner.json.createdDb).toBe(true);
      expect(fs.lstatSync(path.join(managed, 'state.db')).uid).toBe(a.uid);

      const plain = freshHome();
      fs.chmodSync(path.dirname(plain), 0o755);
      fs.mkdirSync(plain, { mode: 0o700 });
      fs.chownSync(plain, a.uid, users.gid);
      const own = runNode(fixture('spool-bulk.mjs'), [plain, 'agent:main:telegram:dm:7', '2'], { env: { HERMES_HOME: plain }, uid: a.uid, gid: users.gid });
      expect(own.status, own.stderr).toBe(0);
      const created = cliJson<{ createdDb: boolean }>(['pending', 'recover', '--create-db', '--home', plain]);
      expect(created.json.createdDb).toBe(true);
      for (const f of fs.readdirSync(plain).filter((n) => n.startsWith('state.db'))) {
        expect([f, fs.lstatSync(path.join(plain, f)).uid]).toEqual([f, a.uid]);
      }
    } finally {
      users.cleanup();
    }
  });

  it("uid B's list and recovery leave uid A's 0600 payload in place and say whose it is", () => {
    const users = createTestUsers(2);
    try {
      const [a, b] = users.users;
      if (a === undefined || b === undefined) throw new Error('no users');
      const home = managedHome(a.uid, users.gid);
      const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
      const seeded = runNode(fixture('seed-home.mjs'), [home], { umask: 0o007, env, uid: a.uid, gid: users.gid });
      expect(seeded.status, seeded.stderr).toBe(0);
      const payload = (JSON.parse(seeded.stdout.trim()) as SeedResult).payload;
      expect(modeOf(payload)).toBe('0600');
      const list = runNode(BIN, ['pending', 'list', '--home', home, '--json'], { umask: 0o007, env, uid: b.uid, gid: users.gid });
      const entries = (JSON.parse(list.stdout) as ListJson).entries;
      expect(entries.map((e) => [e.path, e.problem, e.uid])).toEqual([[payload, 'foreign', a.uid]]);
      const rec = runNode(BIN, ['pending', 'recover', '--home', home, '--json'], { umask: 0o007, env, uid: b.uid, gid: users.gid });
      const report = (JSON.parse(rec.stdout) as RecoverJson).report;
      expect(report?.foreignOwner).toEqual([{ path: payload, uid: a.uid }]);
      expect(report?.inserted).toEqual([]);
      expect(fs.existsSync(payload)).toBe(true);
      const own = runNode(BIN, ['pending', 'recover', '--home', home, '--json'], { umask: 0o007, env, uid: a.uid, gid: users.gid });
      expect((JSON.parse(own.stdout) as RecoverJson).report?.inserted.map((e) => e.path)).toEqual([payload]);
    } finally {
      users.cleanup();
    }
  });
});
