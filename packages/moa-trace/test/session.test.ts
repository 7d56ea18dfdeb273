import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { createMoaTracer, sanitizeSessionId, type MoaTurn } from '../src/index.js';

// Expected stems are hand-written; the 12-hex suffixes were computed independently with
// `printf '%s' "<id>" | sha256sum | cut -c1-12`.
const cases: readonly [label: string, id: string | null | undefined, stem: string][] = [
  ['path traversal', '../../etc/passwd', '___.._etc_passwd-3754d6cb3a38'],
  ['separator', 'a/b', 'a_b-c14cddc033f6'],
  ['colon (cleans to the same text as a/b, different file)', 'a:b', 'a_b-6783a31eabf6'],
  ['NUL', '\u0000', '_-6e340b9cffb3'],
  ['dot', '.', '_-cdb4ee2aea69'],
  ['dot-dot', '..', '__-5ec1f7e700f3'],
  ['hidden', '.hidden', '_hidden-1692419006a8'],
  ['emoji', 'chat-🚀-42', 'chat-_-42-cd58b0d7a2ca'],
  ['300 safe characters', 's'.repeat(300), `${'s'.repeat(187)}-2955c7328c57`],
  ['300 characters with a separator', `${'x'.repeat(150)}/${'y'.repeat(149)}`, `${'x'.repeat(150)}_${'y'.repeat(36)}-14f4f780667b`],
  ['ordinary id', '20250101_120000_abc123', '20250101_120000_abc123'],
  ['exactly 200 safe characters', 'k'.repeat(200), 'k'.repeat(200)],
  ['empty', '', 'unknown-session'],
  ['null', null, 'unknown-session'],
  ['undefined', undefined, 'unknown-session'],
];

function turn(sessionId: string | null | undefined): MoaTurn {
  return {
    sessionId,
    preset: 'p',
    references: [],
    aggregator: { label: 'agg', model: 'm', provider: 'x', inputMessages: [], output: 'ok', streamed: false },
  };
}

describe('sanitizeSessionId', () => {
  for (const [label, id, stem] of cases) {
    it(`${label} → ${stem.length > 40 ? `${stem.slice(0, 20)}…${stem.slice(-16)}` : stem}`, () => {
      expect(sanitizeSessionId(id)).toBe(stem);
      expect(sanitizeSessionId(id)).toBe(stem); // stable
      expect(stem.length).toBeLessThanOrEqual(200);
    });
  }
});

describe('hostile session ids land inside the trace directory', () => {
  it('every id writes exactly the expected file in moa-traces/ and nothing elsewhere', async () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    const tracer = createMoaTracer({ home, saveTraces: true });
    for (const [, id] of cases) {
      const r = await tracer.record(turn(id));
      expect(r.written).toBe(true);
      expect(path.dirname(r.path ?? '')).toBe(path.join(home, 'moa-traces'));
    }
    const expected = [...new Set(cases.map(([, , stem]) => `${stem}.jsonl`))].sort();
    expect(fs.readdirSync(path.join(home, 'moa-traces')).sort()).toEqual(expected);
    expect(fs.readdirSync(root)).toEqual(['home']);
    expect(fs.readdirSync(home)).toEqual(['moa-traces']);
    // Three ids map to unknown-session; the raw id is kept in the record.
    const unknown = fs.readFileSync(path.join(home, 'moa-traces', 'unknown-session.jsonl'), 'utf8').trim().split('\n');
    expect(unknown.map((l) => (JSON.parse(l) as { session_id: unknown }).session_id)).toEqual(['', null, null]);
    const traversal = fs.readFileSync(path.join(home, 'moa-traces', '___.._etc_passwd-3754d6cb3a38.jsonl'), 'utf8');
    expect((JSON.parse(traversal) as { session_id: unknown }).session_id).toBe('../../etc/passwd');
  });
});
