import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { lastJson, runNode, tempRoot } from '@hermes/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSessionDb, SessionDbError } from '../src/index.js';
import { thrown } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/page-cache.mjs', import.meta.url));
const root = tempRoot('hermes-sdb-cache-');
afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

describe('SQLite page cache per connection (cacheSizeKiB)', () => {
  const home = path.join(root, 'home');

  beforeAll(() => {
    fs.mkdirSync(home, { mode: 0o700 });
    openSessionDb({ home }).close(); // the schema, created by the package
    // About 37 MiB of session rows, written in one transaction straight through SQLite (the fixture only reads).
    const raw = new Database(path.join(home, 'state.db'));
    const insert = raw.prepare('INSERT INTO sessions (id, source, title, started_at) VALUES (?, ?, ?, ?)');
    raw.transaction(() => {
      for (let i = 0; i < 60_000; i++) insert.run(`s-${String(i)}`, 'cli', `${String(i)} ${'t'.repeat(500)}`, 1_700_000_000 + i);
    })();
    raw.close();
  }, 120_000);

  function growth(cache: string): number {
    return lastJson<{ growthMiB: number }>(runNode(FIXTURE, [home, cache])).growthMiB;
  }

  it('by default holds about 2 MiB of pages (SQLite\'s own default), not better-sqlite3\'s 16 MB, whatever the table\'s size', () => {
    const byDefault = growth('default');
    // The control: the same scan with better-sqlite3's build default (the size before this option existed), so
    // the measure can fail. The rest of the growth (~7 MiB here) is the scan's own and the same for both.
    const built = growth('16000');
    console.log(`RSS growth over a full scan of ~37 MiB of rows: default ${byDefault.toFixed(1)} MiB, cacheSizeKiB 16000 ${built.toFixed(1)} MiB`);
    expect(byDefault).toBeLessThan(14);
    expect(built - byDefault).toBeGreaterThan(10);
  }, 60_000);

  it.each([0, -1, 1.5, Number.NaN])('refuses cacheSizeKiB %s with EINVALID_OPTION before anything is created', (value) => {
    const fresh = path.join(root, `fresh-${String(value)}`);
    fs.mkdirSync(fresh, { mode: 0o700 });
    const caught = thrown(() => openSessionDb({ home: fresh, cacheSizeKiB: value }));
    expect(caught).toBeInstanceOf(SessionDbError);
    expect((caught as SessionDbError).code).toBe('EINVALID_OPTION');
    expect((caught as SessionDbError).message).toContain('cacheSizeKiB must be a positive integer');
    expect(fs.readdirSync(fresh)).toEqual([]);
  });
});
