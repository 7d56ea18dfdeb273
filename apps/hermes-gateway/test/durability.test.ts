/**
 * Ack means durable: an acknowledged message survives a kill -9 that follows the ack at once, exactly once;
 * a retry with the same Idempotency-Key adds no row, before and after a restart; the planted bug
 * (HERMES_GATEWAY_PLANT=ack-before-fsync) acknowledges before the commit and loses the message.
 */
import { describe, expect, it } from 'vitest';
import { freshHome, post, startReady, userRows } from './helpers.js';

describe('acknowledged means durable (real child, real SQLite, kill -9)', () => {
  it('20 acks, kill -9 right after the last one, restart: every message in state.db exactly once; retries add nothing', async () => {
    const home = freshHome();
    const a = await startReady(home);
    const acks = [];
    for (let i = 0; i < 20; i++) acks.push(await post(a.url, 'agent:main:web:k9', `m${String(i)}`, `key-${String(i)}`));
    a.proc.kill('SIGKILL');
    const exit = await a.exited;
    const rows = userRows(home, 'agent:main:web:k9');
    const b = await startReady(home);
    const retries = await Promise.all(acks.map((_, i) => post(b.url, 'agent:main:web:k9', `m${String(i)}`, `key-${String(i)}`)));
    const after = userRows(home, 'agent:main:web:k9');
    b.proc.kill('SIGTERM');
    const stopped = await b.exited;
    console.log(
      `kill -9 after ack: acked ${String(acks.filter((x) => x.status === 201).length)}, in state.db after the kill ${String(rows.length)}, ` +
        `retries answered 200 ${String(retries.filter((r) => r.status === 200).length)}, rows after retries ${String(after.length)}, exits ${String(exit.signal)}/${String(stopped.code)}`,
    );
    expect(acks.map((x) => x.status)).toEqual(new Array(20).fill(201));
    expect(exit.signal).toBe('SIGKILL');
    expect(rows.map((r) => r.content)).toEqual(acks.map((_, i) => `m${String(i)}`));
    expect(rows.map((r) => r.id)).toEqual(acks.map((x) => x.body.id));
    expect(retries.map((r) => r.status)).toEqual(new Array(20).fill(200));
    expect(retries.map((r) => r.body.id)).toEqual(acks.map((x) => x.body.id));
    expect(retries.every((r) => r.body.replayed === true)).toBe(true);
    expect(after).toEqual(rows);
    expect(stopped.code).toBe(143);
  });

  it('the same Idempotency-Key 50 times at once: one row, one 201, 49 × 200 with its id', async () => {
    const home = freshHome();
    const a = await startReady(home);
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(a.url, 'agent:main:web:idem', 'once', 'same-key')));
    const rows = userRows(home, 'agent:main:web:idem');
    a.proc.kill('SIGTERM');
    await a.exited;
    const created = answers.filter((x) => x.status === 201);
    console.log(`idempotency: 50 concurrent posts, 201 × ${String(created.length)}, 200 × ${String(answers.filter((x) => x.status === 200).length)}, rows ${String(rows.length)}`);
    expect(created.length).toBe(1);
    expect(answers.filter((x) => x.status === 200).length).toBe(49);
    expect(new Set(answers.map((x) => x.body.id))).toEqual(new Set([created[0]?.body.id]));
    expect(rows.map((r) => r.content)).toEqual(['once']);
  });

  it('planted bug ack-before-fsync acks before the commit and loses the message on kill -9; the real gateway does not', async () => {
    const run = async (plant: boolean): Promise<{ ackMs: number; status: number; rows: number }> => {
      const home = freshHome();
      const c = await startReady(home, ['--commit-window-ms', '1500'], plant ? { HERMES_GATEWAY_PLANT: 'ack-before-fsync' } : {});
      const ack = await post(c.url, 'agent:main:web:plant', 'must survive', 'p1');
      c.proc.kill('SIGKILL');
      await c.exited;
      return { ackMs: ack.ms, status: ack.status, rows: userRows(home, 'agent:main:web:plant').length };
    };
    const planted = await run(true);
    const real = await run(false);
    console.log(
      `planted ack-before-fsync: ack ${String(planted.status)} after ${planted.ackMs.toFixed(0)} ms, rows after kill -9 ${String(planted.rows)}; ` +
        `real: ack ${String(real.status)} after ${real.ackMs.toFixed(0)} ms, rows ${String(real.rows)} (commit window 1,500 ms)`,
    );
    expect(planted.status).toBe(201);
    expect(planted.ackMs).toBeLessThan(1000);
    expect(planted.rows).toBe(0);
    expect(real.status).toBe(201);
    expect(real.ackMs).toBeGreaterThanOrEqual(1500);
    expect(real.rows).toBe(1);
  });
});
