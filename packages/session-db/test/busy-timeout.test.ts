import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openSessionDb, SessionDbError } from '../src/index.js';
import { tempDir, thrown } from './helpers.js';

describe('busyTimeoutMs: the SQLite busy timeout, checked before anything is created', () => {
  // better-sqlite3 refuses these itself, but only after state.db has been created, and with a plain TypeError or
  // RangeError that carries no code: the option is checked first.
  it.each([-1, 1.5, 2_147_483_648, Number.NaN, Number.POSITIVE_INFINITY, '5000'])('refuses %s with EINVALID_OPTION and creates nothing', (value) => {
    const home = tempDir();
    const caught = thrown(() => openSessionDb({ home, busyTimeoutMs: value as number }));
    expect(caught).toBeInstanceOf(SessionDbError);
    expect((caught as SessionDbError).code).toBe('EINVALID_OPTION');
    expect((caught as SessionDbError).message).toContain('busyTimeoutMs must be an integer from 0 to 2147483647');
    expect(fs.readdirSync(home)).toEqual([]);
  });

  it.each([0, 2_147_483_647])('accepts %s', (value) => {
    const home = tempDir();
    openSessionDb({ home, busyTimeoutMs: value }).close();
    expect(fs.readdirSync(home)).toContain('state.db');
  });
});
