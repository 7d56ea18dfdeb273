import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { createTestUsers, describeNeeds, runNode } from '@hermes/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cli, cliJson, freshHome, modeOf, seedHome, type SeedResult, cleanupHomes } from './helpers.js';

afterAll(cleanupHomes);

const SECRET = 'sk-proj-Zx81kQ2mN7pR4tV9wB3cD6fG';
const GH_TOKEN = ['ghp_', 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'].join('');

describe('hermes-fs save: a session from state.db as a /save snapshot', () => {
  let home: string;
  let seed: SeedResult;

  beforeAll(() => {
    home = freshHome();
    seed = seedHome(home);
    const db = openSessionDb({ home });
    db.appendMessage({ sessionId: seed.sessionId, role: 'user', content: `my key is ${SECRET}`, timestamp: 1_764_000_002 });
    db.close();
  });

  it('writes a JSON snapshot (0600) in sessions/saved/ with the exported session', () => {
    const r = cli(['save', '--session', seed.sessionId, '--home', home], { env: { NO_COLOR: '1' } });
    expect(r.status, r.stderr).toBe(0);
    const m = /^\(\^_\^\)v Conversation saved to: (.+) \(JSON\)$/m.exec(r.stdout);
    expect(m).not.toBeNull();
    const file = m?.[1] ?? '';
    expect(path.dirname(file)).toBe(path.join(home, 'sessions', 'saved'));
    expect(path.basename(file)).toMatch(/^hermes_conversation_\d{8}_\d{6}(_\d+)?\.json$/);
    expect(modeOf(file)).toBe('0600');
    const snap = JSON.parse(fs.readFileSync(file, 'utf8')) as { id: string; messages: { content: string }[] };
    expect(snap.id).toBe(seed.sessionId);
    expect(snap.messages.map((x) => x.content)).toEqual(['hello from the seed', 'hello back', `my key is ${SECRET}`]);
  });

  it('--format md --redact masks secrets; --json describes the result', () => {
    const { run, json } = cliJson<{ ok: boolean; path: string; format: string; mode: string; redacted: boolean; messages: number }>([
      'save', '--session', seed.sessionId, '--format', 'md', '--redact', '--home', home,
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(json).toMatchObject({ ok: true, format: 'md', mode: '0600', redacted: true, messages: 3 });
    const md = fs.readFileSync(json.path, 'utf8');
    expect(md).toContain('hello from the seed');
    expect(md).not.toContain(SECRET);
  });

  it('--output names the file (the extension picks the format)', () => {
    const { json } = cliJson<{ path: string; format: string }>(['save', '--session', seed.sessionId, '--output', 'incident.html', '--home', home]);
    expect(json.path).toBe(path.join(home, 'sessions', 'saved', 'incident.html'));
    expect(json.format).toBe('html');
    expect(fs.readFileSync(json.path, 'utf8')).toMatch(/^<!DOCTYPE html>/i);
    const agreeing = cliJson<{ format: string }>(['save', '--session', seed.sessionId, '--output', 'notes.md', '--format', 'md', '--home', home]);
    expect(agreeing.json.format).toBe('md');
  });

  it('--output whose extension is not a snapshot format, or disagrees with --format, is a usage error: exit 2, no file', () => {
    const pdf = cli(['save', '--session', seed.sessionId, '--output', 'x.pdf', '--home', home]);
    expect(pdf.status, pdf.stderr).toBe(2);
    expect(pdf.stderr).toContain('hermes-fs: error: --output x.pdf: the name must end in .md, .json or .html');
    const clash = cliJson<{ ok: boolean; error: { code: string; message: string } }>(['save', '--session', seed.sessionId, '--output', 'x.md', '--format', 'json', '--home', home]);
    expect(clash.run.status, clash.run.stderr).toBe(2);
    expect(clash.json).toMatchObject({ ok: false, error: { code: 'EUSAGE', message: '--output x.md names a md file but --format is json' } });
    for (const name of ['x.pdf', 'x.md']) expect(fs.existsSync(path.join(home, 'sessions', 'saved', name))).toBe(false);
  });

  it('--redact masks keys glued to a word (a proxy-prefixed key in the model field, x_ghp_… in a message)', () => {
    const glued = freshHome();
    const db = openSessionDb({ home: glued });
    db.createSession({ id: 'glued', source: 'cli', model: `proxy-${SECRET}` });
    db.appendMessage({ sessionId: 'glued', role: 'user', content: `use x_${GH_TOKEN} please` });
    db.close();
    const { run, json } = cliJson<{ path: string; redacted: boolean }>(['save', '--session', 'glued', '--redact', '--home', glued]);
    expect(run.status, run.stderr).toBe(0);
    const saved = fs.readFileSync(json.path, 'utf8');
    expect(saved).not.toContain(SECRET.slice(8));
    expect(saved).not.toContain(GH_TOKEN.slice(4));
    expect(saved).toContain('proxy-sk-pro...D6fG');
    expect(saved).toContain('use x_ghp_A1...Q7r8 please');
  });

  it('an unknown session: "(x_x) Failed to save: <reason>", exit 1', () => {
    const r = cli(['save', '--session', 'no-such-session', '--home', home]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toBe(`(x_x) Failed to save: session no-such-session not found in ${path.join(home, 'state.db')}\n`);
  });

  it('a home without state.db: "(x_x) Failed to save: <reason>" with ENOENT, exit 1, nothing created', () => {
    const empty = freshHome();
    fs.mkdirSync(empty);
    const r = cli(['save', '--session', 'x', '--home', empty]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toBe(
      `(x_x) Failed to save: no session database at ${path.join(empty, 'state.db')} (ENOENT)\n` +
        "hint: check --home: the gateway's home holds state.db\n",
    );
    expect(fs.readdirSync(empty)).toEqual([]);
    const j = cliJson<{ ok: boolean; exitCode: number; error: { code: string; path: string } }>(['save', '--session', 'x', '--home', empty]);
    expect(j.json).toMatchObject({ ok: false, exitCode: 1, error: { code: 'ENOENT', path: path.join(empty, 'state.db') } });
  });

  it('a name escaping sessions/saved/ is refused by @hermes/cli: exit 1, no file', () => {
    const r = cli(['save', '--session', seed.sessionId, '--output', '../../escape.json', '--home', home]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^\(x_x\) Failed to save: /);
    expect(fs.existsSync(path.join(home, 'escape.json'))).toBe(false);
    expect(fs.existsSync(path.join(path.dirname(home), 'escape.json'))).toBe(false);
  });

  it('--session is required (usage error, exit 2)', () => {
    const r = cli(['save', '--home', home]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain("required option '--session <id>' not specified");
  });
});

describeNeeds(['root', 'useradd'], 'hermes-fs save as a uid that may not read state.db (real user)', () => {
  it('says EACCES and whose the file is, never "no session database"', () => {
    const users = createTestUsers(1);
    try {
      const [u] = users.users;
      if (u === undefined) throw new Error('no user');
      const home = freshHome();
      fs.chmodSync(path.dirname(home), 0o755);
      seedHome(home);
      fs.chmodSync(home, 0o755);
      expect(modeOf(path.join(home, 'state.db'))).toBe('0600');
      const r = runNode(BIN, ['save', '--session', 'seed-session-1', '--home', home], { uid: u.uid, gid: users.gid });
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr.split('\n')[0]).toBe(
        `(x_x) Failed to save: cannot read ${path.join(home, 'state.db')}: permission denied for uid ${u.uid} (EACCES, owned by uid 0 (root), mode 0600)`,
      );
      expect(r.stderr).not.toContain('no session database');
    } finally {
      users.cleanup();
    }
  });
});
