import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadEnvironment } from '@hermes/fs-policy';
import { freshHome, UNMANAGED } from './helpers.js';
import { saveConversation } from '../src/index.js';

// @hermes/session-db is a devDependency, built before the tests run (turbo `build` runs first in `pnpm test`).
describe('a session exported from a real state.db saves as it is', () => {
  it('exportSession(id) → saveConversation: the export, every field kept, 0600', async () => {
    const { openSessionDb } = await import('@hermes/session-db');
    const home = freshHome();
    const env = loadEnvironment({ home, env: UNMANAGED });
    fs.mkdirSync(home, { recursive: true });
    const db = openSessionDb({ home, env });
    try {
      const id = db.createSession({ id: 'db-session-1', source: 'cli', model: 'test/model', title: 'From the DB', startedAt: 1735787045 });
      db.appendMessage({ sessionId: id, role: 'user', content: 'hello from state.db', timestamp: 1735787046 });
      db.appendMessage({
        sessionId: id,
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
        timestamp: 1735787047,
      });
      db.appendMessage({ sessionId: id, role: 'tool', content: 'found', toolName: 'lookup', toolCallId: 'c1', timestamp: 1735787048 });
      const exported = db.exportSession(id);
      if (exported === undefined) throw new Error('session not exported');
      const r = await saveConversation(exported, { home, filename: 'db.json', env });
      expect(r.path).toBe(path.join(home, 'sessions', 'saved', 'db.json'));
      expect(JSON.parse(fs.readFileSync(r.path, 'utf8'))).toEqual(JSON.parse(JSON.stringify(exported)));
      const md = await saveConversation(exported, { home, filename: 'db.md', env });
      const text = fs.readFileSync(md.path, 'utf8');
      expect(text.startsWith('# Session: From the DB\n- Session ID: `db-session-1`\n- Source: `cli`\n- Model: `test/model`\n')).toBe(true);
      expect(text).toContain('## Tool: lookup - 2025-01-02T03:04:08Z\n\n<details><summary>lookup</summary>\n\n```text\nfound\n```\n\n</details>');
    } finally {
      db.close();
    }
  });
});
