import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { openSessionDb, SessionDbError } from '../src/index.js';

const root = tempRoot('hermes-sdb-busy-');

function fresh(label: string): string {
  const home = path.join(root, label);
  fs.mkdirSync(home, { mode: 0o700 });
  return home;
}

describe('busyTimeoutMs: the SQLite busy timeout, checked before anything is created', () => {
  // better-sqlite3 refuses these itself, but only after state.db has been created, and with a plain TypeError or
  // RangeError that carries no code: the option is checked first.
  it.each([-1, 1.5, 2_147_483_648, Number.NaN, Number.POSITIVE_INFINITY, '5000'])('refuses %s with EINVALID_OPTION and creates nothing', (value) => {
    const home = fresh(`bad-${String(value)}`);
    let caught: unknown;
    try {
      openSessionDb({ home, busyTimeoutMs: value as number });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SessionDbError);
    expect((caught as SessionDbError).code).toBe('EINVALID_OPTION');
    expect((caught as SessionDbError).message).toContain('busyTimeoutMs must be an integer from 0 to 2147483647');
    expect(fs.readdirSync(home)).toEqual([]);
  });

  it.each([0, 2_147_483_647])('accepts %s', (value) => {
    const home = fresh(`ok-${String(value)}`);
    const db = openSessionDb({ home, busyTimeoutMs: value });
    db.close();
    expect(fs.readdirSync(home)).toContain('state.db');
  });
});
