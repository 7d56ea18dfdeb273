/**
 * Bounded parsing (the gateway's round-3 audit, row 6): a spool file nested 100,000 levels deep with a Python
 * `NaN` token (so the tolerant parser, not JSON.parse, reads it) used to overflow the JS stack, and `pending list`
 * could not list the spool at all. Parsing now stops at an explicit depth (MAX_JSON_DEPTH) with a typed error, and
 * listing and recovery go on with the other files.
 */
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import { JsonTooDeepError, listSpool, MAX_JSON_DEPTH, parseJsonTolerant, recoverPending } from '../src/index.js';
import { memoryLogger, tempDir, writeSpoolFile } from './helpers.js';

const KEY = 'agent:main:telegram:dm:deep';
const DEEP = 100_000;
const nested = (inner: string): string => `${'['.repeat(DEEP)}${inner}${']'.repeat(DEEP)}`;

describe('bounded parsing', () => {
  it(`a document nested ${String(DEEP)} levels is refused with ETOO_DEEP (with NaN: the tolerant parser; without: after JSON.parse)`, () => {
    for (const text of [nested('NaN'), nested('1'), `{"a":${nested('1')}}`]) {
      let caught: unknown;
      try {
        parseJsonTolerant(text);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(JsonTooDeepError);
      expect(caught).toBeInstanceOf(SyntaxError);
      expect((caught as JsonTooDeepError).code).toBe('ETOO_DEEP');
      expect((caught as Error).message).toMatch(/^nested deeper than 512 levels at position \d+$/);
    }
    // At the limit, and Python's tokens inside it, still parse; brackets inside strings do not count.
    expect(MAX_JSON_DEPTH).toBe(512);
    expect(parseJsonTolerant(`${'['.repeat(512)}NaN${']'.repeat(512)}`)).toBeInstanceOf(Array);
    expect(parseJsonTolerant(JSON.stringify({ text: '['.repeat(5000) }))).toEqual({ text: '['.repeat(5000) });
  });

  it('listing and recovery keep working: the deep file is one too-deep entry that says why, the others are delivered', () => {
    const home = path.join(tempDir(), 'home');
    writeSpoolFile(home, `pending-${'0'.repeat(31)}1.json`, JSON.stringify({ session_key: KEY, reason: 'shutdown', ts: 1700000001, seq: 0, data: { text: 'still here', session_id: 's-deep' } }));
    writeSpoolFile(home, `pending-${'0'.repeat(31)}2.json`, `{"session_key":"${KEY}","ts":1700000002,"data":${nested('NaN')}}`);
    const entries = listSpool({ home });
    console.log(`deep json: ${String(entries.length)} entries listed, problems ${JSON.stringify(entries.map((e) => e.problem ?? null))}`);
    expect(entries.map((e) => e.problem ?? null)).toEqual(['too-deep', null]);
    expect(entries[0]?.detail).toMatch(/^nested deeper than 512 levels at position \d+$/);

    const db = openSessionDb({ home });
    db.createSession({ id: 's-deep', source: 'telegram', sessionKey: KEY, startedAt: 1700000000 });
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(db.exportSession('s-deep')?.messages.map((m) => m.content)).toEqual(['still here']);
    db.close();
    expect(report.kept.map((k) => k.reason)).toEqual(['too-deep']);
    expect(report.kept[0]?.detail).toContain('nested deeper than 512 levels');
  });
});
