import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { itNeeds } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS, openSessionDb, SessionDbError } from '../src/index.js';
import { tempDir, thrown } from './helpers.js';

/** `PRAGMA table_info` column names, in table order. */
function columns(file: string, table: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

function schemaDump(file: string): unknown[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY type, name').all();
  } finally {
    db.close();
  }
}

function runPython(code: string, ...args: string[]): string {
  const r = spawnSync('python3', ['-c', code, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3 failed (${String(r.status)}): ${r.stderr}`);
  return r.stdout;
}

describe('schema: the reference subset (python-consumers §1.8)', () => {
  it('creates sessions and messages with the reference table and column names', () => {
    const home = tempDir();
    openSessionDb({ home }).close();
    const file = path.join(home, 'state.db');
    expect(columns(file, 'sessions')).toEqual([
      'id',
      'source',
      'user_id',
      'session_key',
      'chat_id',
      'chat_type',
      'thread_id',
      'model',
      'model_config',
      'parent_session_id',
      'started_at',
      'ended_at',
      'end_reason',
      'message_count',
      'tool_call_count',
      'title',
      'last_activity_at',
      'cwd',
    ]);
    expect(columns(file, 'messages')).toEqual([
      'id',
      'session_id',
      'role',
      'content',
      'tool_call_id',
      'tool_calls',
      'tool_name',
      'timestamp',
      'token_count',
      'finish_reason',
      'platform_message_id',
      'active',
      'compacted',
      'api_content',
      'display_kind',
      'display_metadata',
      'display_identity',
      'display_order',
    ]);
    expect(columns(file, 'recovery_receipts')).toEqual(['receipt_id', 'file_name', 'inserted_at', 'rows']);
    const db = new Database(file, { readonly: true });
    try {
      expect(db.prepare('SELECT component, version FROM hermes_schema').all()).toEqual([
        { component: 'session-db', version: 4 },
      ]);
      // The reference's own version table is not ours to write.
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'schema_version'").all()).toEqual([]);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
    }
  });

  itNeeds(['python3'], 'a database written by session-db opens in Python and returns the rows', () => {
    const home = tempDir();
    const db = openSessionDb({ home });
    db.createSession({ id: 'py-1', source: 'telegram', model: 'hermes-3' });
    db.appendMessage({ sessionId: 'py-1', role: 'user', content: 'hello from node', timestamp: 1700000000.5 });
    db.appendMessage({ sessionId: 'py-1', role: 'assistant', content: 'reply', timestamp: 1700000001 });
    // Python reads while the Node connection is still open (WAL, shared use).
    const out = runPython(
      [
        'import json, sqlite3, sys',
        'c = sqlite3.connect(sys.argv[1])',
        'rows = c.execute("SELECT session_id, role, content, timestamp FROM messages ORDER BY id").fetchall()',
        'count = c.execute("SELECT message_count FROM sessions WHERE id = ?", ("py-1",)).fetchone()[0]',
        'print(json.dumps({"rows": rows, "count": count}))',
      ].join('\n'),
      path.join(home, 'state.db'),
    );
    db.close();
    expect(JSON.parse(out)).toEqual({
      rows: [
        ['py-1', 'user', 'hello from node', 1700000000.5],
        ['py-1', 'assistant', 'reply', 1700000001],
      ],
      count: 2,
    });
  });

  itNeeds(['python3'], 'opens a database the Python reference created, without touching its schema_version', () => {
    const home = tempDir();
    const file = path.join(home, 'state.db');
    runPython(
      [
        'import sqlite3, sys',
        'c = sqlite3.connect(sys.argv[1])',
        'c.execute("PRAGMA journal_mode=WAL")',
        'c.executescript("""',
        'CREATE TABLE schema_version (version INTEGER NOT NULL);',
        'INSERT INTO schema_version VALUES (30);',
        'CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);',
        'CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, created_source TEXT, user_id TEXT,',
        '  session_key TEXT, model TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL,',
        '  end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,',
        '  input_tokens INTEGER DEFAULT 0, title TEXT, FOREIGN KEY (parent_session_id) REFERENCES sessions(id));',
        'CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),',
        '  role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,',
        '  reasoning TEXT, observed INTEGER DEFAULT 0, active INTEGER NOT NULL DEFAULT 1);',
        'INSERT INTO sessions (id, source, started_at, message_count, input_tokens) VALUES (\'ref-1\', \'cli\', 1700000000, 1, 42);',
        'INSERT INTO messages (session_id, role, content, timestamp, reasoning) VALUES (\'ref-1\', \'user\', \'from python\', 1700000001, \'r\');',
        '""")',
        'c.commit()',
      ].join('\n'),
      file,
    );
    const db = openSessionDb({ home });
    expect(db.schemaVersion).toBe(4);
    db.appendMessage({ sessionId: 'ref-1', role: 'assistant', content: 'from node', timestamp: 1700000002 });
    db.close();
    const out = runPython(
      [
        'import json, sqlite3, sys',
        'c = sqlite3.connect(sys.argv[1])',
        'print(json.dumps({',
        '  "version": c.execute("SELECT version FROM schema_version").fetchall(),',
        '  "rows": c.execute("SELECT role, content, reasoning FROM messages ORDER BY id").fetchall(),',
        '  "session": c.execute("SELECT message_count, input_tokens FROM sessions WHERE id = \'ref-1\'").fetchone(),',
        '}))',
      ].join('\n'),
      file,
    );
    expect(JSON.parse(out)).toEqual({
      version: [[30]],
      rows: [
        ['user', 'from python', 'r'],
        ['assistant', 'from node', null],
      ],
      session: [2, 42],
    });
    // The subset's missing nullable columns were added; the reference's extra columns kept.
    expect(columns(file, 'sessions')).toEqual([
      'id',
      'source',
      'created_source',
      'user_id',
      'session_key',
      'model',
      'parent_session_id',
      'started_at',
      'ended_at',
      'end_reason',
      'message_count',
      'tool_call_count',
      'input_tokens',
      'title',
      'chat_id',
      'chat_type',
      'thread_id',
      'model_config',
      'last_activity_at',
      'cwd',
    ]);
  });
});

describe('schema: forward-only migrations', () => {
  it('migrates a version-1 database forward to 3 and keeps its rows', () => {
    const home = tempDir();
    const file = path.join(home, 'state.db');
    const raw = new Database(file);
    const step1 = MIGRATIONS[0];
    if (step1 === undefined) throw new Error('no migration 1');
    step1.up(raw);
    raw.exec('CREATE TABLE hermes_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL, updated_at REAL NOT NULL)');
    raw.prepare("INSERT INTO hermes_schema VALUES ('session-db', 1, 0)").run();
    raw.prepare("INSERT INTO sessions (id, source, started_at) VALUES ('old', 'cli', 1700000000)").run();
    raw.close();
    expect(columns(file, 'recovery_receipts')).toEqual([]);

    const db = openSessionDb({ home });
    expect(db.schemaVersion).toBe(4);
    expect(db.getSession('old')?.source).toBe('cli');
    expect(db.hasReceipt('nothing')).toBe(false);
    db.close();
    expect(columns(file, 'recovery_receipts')).toEqual(['receipt_id', 'file_name', 'inserted_at', 'rows']);
  });

  it('refuses a database newer than the code with ESCHEMA_NEWER and changes nothing', () => {
    const home = tempDir();
    const file = path.join(home, 'state.db');
    openSessionDb({ home }).close();
    const raw = new Database(file);
    raw.prepare("UPDATE hermes_schema SET version = 99 WHERE component = 'session-db'").run();
    raw.pragma('journal_mode = DELETE');
    raw.close();
    const before = schemaDump(file);
    const bytes = fs.readFileSync(file);

    const caught = thrown(() => openSessionDb({ home }));
    expect(caught).toBeInstanceOf(SessionDbError);
    expect((caught as SessionDbError).code).toBe('ESCHEMA_NEWER');
    expect((caught as SessionDbError).message).toContain('schema version 99');
    expect(schemaDump(file)).toEqual(before);
    // Not even the journal mode was switched to WAL: the file is byte-for-byte what it was.
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    expect(() => openSessionDb({ home, readonly: true })).toThrow(/schema version 99/);
  });

  it('refuses a foreign sessions table that lacks a required column (ESCHEMA_INCOMPATIBLE)', () => {
    const home = tempDir();
    const raw = new Database(path.join(home, 'state.db'));
    raw.exec('CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL)');
    raw.close();
    const err = thrown(() => openSessionDb({ home }));
    expect(err).toBeInstanceOf(SessionDbError);
    expect((err as SessionDbError).code).toBe('ESCHEMA_INCOMPATIBLE');
  });

  it("gives idx_sessions_session_key the reference's (session_key, started_at DESC), also on a database made with the old index", () => {
    const keyColumns = (file: string): unknown[] => {
      const db = new Database(file, { readonly: true });
      try {
        return (db.prepare('PRAGMA index_xinfo(idx_sessions_session_key)').all() as { name: string | null; desc: number; key: number }[])
          .filter((c) => c.key === 1)
          .map((c) => [c.name, c.desc]);
      } finally {
        db.close();
      }
    };
    // A fresh database.
    const fresh = tempDir();
    openSessionDb({ home: fresh }).close();
    expect(keyColumns(path.join(fresh, 'state.db'))).toEqual([
      ['session_key', 0],
      ['started_at', 1],
    ]);

    // A database an earlier version made: schema version 2 with the index on (session_key) alone.
    const home = tempDir();
    const file = path.join(home, 'state.db');
    const raw = new Database(file);
    for (const step of MIGRATIONS.slice(0, 2)) step.up(raw);
    raw.exec('CREATE TABLE hermes_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL, updated_at REAL NOT NULL)');
    raw.prepare("INSERT INTO hermes_schema VALUES ('session-db', 2, 0)").run();
    raw.close();
    expect(keyColumns(file)).toEqual([['session_key', 0]]);
    const db = openSessionDb({ home });
    expect(db.schemaVersion).toBe(4);
    db.close();
    expect(keyColumns(file)).toEqual([
      ['session_key', 0],
      ['started_at', 1],
    ]);
  });

  itNeeds(['python3'], "the reference's IF NOT EXISTS index statement finds its own definition in a database made here", () => {
    const home = tempDir();
    const file = path.join(home, 'state.db');
    openSessionDb({ home }).close();
    const before = schemaDump(file);
    const out = runPython(
      [
        'import json, sqlite3, sys',
        'c = sqlite3.connect(sys.argv[1])',
        'c.execute("CREATE INDEX IF NOT EXISTS idx_sessions_session_key ON sessions(session_key, started_at DESC)")',
        'c.commit()',
        'plan = c.execute("EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE session_key = ? ORDER BY started_at DESC", ("k",)).fetchall()',
        'print(json.dumps([r[3] for r in plan]))',
      ].join('\n'),
      file,
    );
    expect(schemaDump(file)).toEqual(before);
    expect(JSON.parse(out)).toEqual(['SEARCH sessions USING INDEX idx_sessions_session_key (session_key=?)']);
  });

  itNeeds(['python3'], "a string that starts with the JSON prefix reads back as that string in the reference's decoder", () => {
    const home = tempDir();
    const db = openSessionDb({ home });
    db.createSession({ id: 's', source: 'cli' });
    const texts = ['\u0000json:{"a": 1}', '\u0001json:[1]', 'plain', 'a\uD800b'];
    for (const content of texts) db.appendMessage({ sessionId: 's', role: 'user', content, timestamp: 1700000000 });
    db.appendMessage({ sessionId: 's', role: 'user', content: [{ type: 'text', text: 't' }], timestamp: 1700000001 });
    db.close();
    // The reference's rule, in our words: a value starting with a JSON prefix is json.loads of the rest.
    const out = runPython(
      [
        'import json, sqlite3, sys',
        'c = sqlite3.connect(sys.argv[1])',
        'def decode(v):',
        '    for p in ("\\x00json:", "\\x01json:"):',
        '        if isinstance(v, str) and v.startswith(p):',
        '            return json.loads(v[len(p):])',
        '    return v',
        'rows = [decode(r[0]) for r in c.execute("SELECT content FROM messages ORDER BY id")]',
        'print(json.dumps(rows))',
      ].join('\n'),
      path.join(home, 'state.db'),
    );
    expect(JSON.parse(out)).toEqual([...texts, [{ type: 'text', text: 't' }]]);
  });
});
