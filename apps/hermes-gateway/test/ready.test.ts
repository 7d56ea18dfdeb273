/**
 * Start-up: /readyz answers 503 (and messages are refused 503) while the spool is recovered into state.db, and
 * 200 only after every spooled message is in state.db — exactly once, in order. A second gateway on the same
 * home is refused (exit 2) while the first holds the lock.
 */
import { flushOverflow } from '@hermes/gateway';
import { describe, expect, it } from 'vitest';
import { sessionIdFor, SPOOL_MARKER } from '../src/ids.js';
import { freshHome, post, startChild, userRows } from './helpers.js';

const KEYS = ['agent:main:seed:a', 'agent:main:seed:b', 'agent:main:seed:c'];
const PER_KEY = 1000;

describe('readiness waits for the spool recovery (real child, 3,000 spooled payloads)', () => {
  it('503 until recovery finished, then 200 with every spooled message in state.db once; a second gateway is refused', async () => {
    const home = freshHome();
    const t0 = 1_800_000_000;
    const overflow = new Map(
      KEYS.map((key) => [
        key,
        Array.from({ length: PER_KEY }, (_, i) => ({ text: `s${String(i)}`, timestamp: t0 + i / 1000, session_id: sessionIdFor(key), via: SPOOL_MARKER, idempotency_key: `seed-${String(i)}` })),
      ]),
    );
    const report = await flushOverflow(overflow, { home, reason: 'db-unavailable' });
    expect(report.written.length).toBe(KEYS.length * PER_KEY);

    const c = await startChild(home);
    const seen: number[] = [];
    let refusedPost: number | undefined;
    for (;;) {
      const res = await fetch(`${c.url}/readyz`);
      seen.push(res.status);
      if (res.status === 200) break;
      refusedPost ??= (await post(c.url, KEYS[0] ?? '', 'too early')).status;
    }
    const rowsAtReady = KEYS.map((k) => userRows(home, k));
    const second = await startChild(home).then(
      async (s) => (await s.exited).code,
      (err: unknown) => Number(/exited \((\d+)\)/.exec((err as Error).message)?.[1] ?? -1),
    );
    const retry = await post(c.url, KEYS[0] ?? '', 's0', 'seed-0');
    c.proc.kill('SIGTERM');
    const exit = await c.exited;
    const first200 = seen.indexOf(200);
    console.log(
      `readiness: /readyz answered 503 × ${String(first200)} then 200; a message during recovery got ${String(refusedPost)}; ` +
        `rows at the first 200: ${rowsAtReady.map((r) => r.length).join('/')}; second gateway exit ${String(second)}; ` +
        `retry of a recovered key ${String(retry.status)}; exit ${String(exit.code)}`,
    );
    expect(first200).toBeGreaterThan(0);
    expect(seen.slice(0, first200).every((s) => s === 503)).toBe(true);
    expect(refusedPost).toBe(503);
    for (const rows of rowsAtReady) expect(rows.map((r) => r.content)).toEqual(Array.from({ length: PER_KEY }, (_, i) => `s${String(i)}`));
    expect(second).toBe(2);
    expect(retry.status).toBe(200);
    expect(retry.body.id).toBe(rowsAtReady[0]?.[0]?.id);
    expect(exit.code).toBe(143);
  });
});
