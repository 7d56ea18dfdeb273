import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, cliJson, freshHome, modeOf, seedHome, type SeedResult, cleanupHomes } from './helpers.js';

afterAll(cleanupHomes);

const SECRET = 'sk-proj-Zx81kQ2mN7pR4tV9wB3cD6fG';

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
    expect(r.status).toBe(0);
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
    expect(run.status).toBe(0);
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
  });

  it('an unknown session: "(x_x) Failed to save: <reason>", exit 1', () => {
    const r = cli(['save', '--session', 'no-such-session', '--home', home]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`(x_x) Failed to save: session no-such-session not found in ${path.join(home, 'state.db')}\n`);
  });

  it('a home without state.db: "(x_x) Failed to save: <reason>", exit 1, nothing created', () => {
    const empty = freshHome();
    fs.mkdirSync(empty);
    const r = cli(['save', '--session', 'x', '--home', empty]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`(x_x) Failed to save: no session database at ${path.join(empty, 'state.db')}\n`);
    expect(fs.readdirSync(empty)).toEqual([]);
  });

  it('a name escaping sessions/saved/ is refused by @hermes/cli: exit 1, no file', () => {
    const r = cli(['save', '--session', seed.sessionId, '--output', '../../escape.json', '--home', home]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^\(x_x\) Failed to save: /);
    expect(fs.existsSync(path.join(home, 'escape.json'))).toBe(false);
    expect(fs.existsSync(path.join(path.dirname(home), 'escape.json'))).toBe(false);
  });

  it('--session is required (usage error, exit 2)', () => {
    const r = cli(['save', '--home', home]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("required option '--session <id>' not specified");
  });
});
