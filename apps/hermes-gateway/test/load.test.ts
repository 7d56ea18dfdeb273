/**
 * Group commit under load: 1,000 concurrent posts over 10 sessions all acknowledged, all in state.db in
 * per-session order, in far fewer commits than messages; 10 clients' ack latency; SIGTERM during load.
 */
import { describe, expect, it } from 'vitest';
import { freshHome, metric, percentile, post, startReady, userRows } from './helpers.js';

const SESSIONS = Array.from({ length: 10 }, (_, i) => `agent:main:load:s${String(i)}`);
// Turns never finish during the measurement: every commit counted is one of messages.
const SLOW_TURNS = ['--turn-latency-ms', '600000'];

describe('group commit (real child, loopback)', () => {
  it('1,000 concurrent posts over 10 sessions: all acked, all present once, commits ≪ 1,000; 10 sequential clients keep their order', async () => {
    const home = freshHome();
    const c = await startReady(home, SLOW_TURNS);
    const before = await metric(c.url, 'hermes_gateway_commits_total');
    const burst = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => post(c.url, SESSIONS[i % 10] ?? '', `b${String(i)}`, `b-${String(i)}`)),
    );
    const burstCommits = (await metric(c.url, 'hermes_gateway_commits_total')) - before;

    // 10 clients, one per session, 100 messages each, each waiting for its ack before the next.
    const mid = await metric(c.url, 'hermes_gateway_commits_total');
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(
      SESSIONS.map(async (key) => {
        for (let i = 0; i < 100; i++) {
          const a = await post(c.url, key, `q${String(i)}`, `q-${key}-${String(i)}`);
          expect(a.status).toBe(201);
          latencies.push(a.ms);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const seqCommits = (await metric(c.url, 'hermes_gateway_commits_total')) - mid;
    c.proc.kill('SIGTERM');
    const exit = await c.exited;

    const perSession = SESSIONS.map((key) => userRows(home, key));
    const all = perSession.flat();
    const burstIds = burst.map((a) => a.body.id);
    console.log(
      `group commit: 1,000 concurrent posts → ${String(burst.filter((a) => a.status === 201).length)} acked in ${String(burstCommits)} commits; ` +
        `10 sequential clients × 100: ${String(latencies.length)} acks in ${String(seqCommits)} commits, ${(latencies.length / seconds).toFixed(0)} acks/s, ` +
        `ack latency p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms; rows ${String(all.length)}; exit ${String(exit.code)}`,
    );
    expect(burst.map((a) => a.status)).toEqual(new Array(1000).fill(201));
    expect(new Set(burstIds).size).toBe(1000);
    expect(burstCommits).toBeLessThan(100); // measured: 13
    expect(all.length).toBe(2000);
    for (const [s, rows] of perSession.entries()) {
      const texts = rows.map((r) => String(r.content));
      // The burst's messages of this session, in the order the gateway acknowledged them (row id)...
      const burstOfSession = burst.filter((_, i) => i % 10 === s).sort((x, y) => Number(x.body.id) - Number(y.body.id));
      expect(texts.filter((t) => t.startsWith('b'))).toEqual(burstOfSession.map((a) => `b${String(burst.indexOf(a))}`));
      // ...and the sequential client's in exactly the order it sent them, after the burst.
      expect(texts.filter((t) => t.startsWith('q'))).toEqual(Array.from({ length: 100 }, (_, i) => `q${String(i)}`));
      expect(rows.map((r) => r.id)).toEqual([...rows.map((r) => r.id)].sort((x, y) => x - y));
    }
    expect(exit.code).toBe(143);
  });

  it('SIGTERM during load: exit 143, every acknowledged message in state.db exactly once, the rest refused (503) or unanswered', async () => {
    const home = freshHome();
    const c = await startReady(home, SLOW_TURNS);
    let acked = 0;
    const results = Promise.all(
      Array.from({ length: 3000 }, async (_, i) => {
        const a = await post(c.url, SESSIONS[i % 10] ?? '', `t${String(i)}`, `t-${String(i)}`);
        if (a.status === 201) {
          acked++;
          if (acked === 300) c.proc.kill('SIGTERM');
        }
        return a;
      }),
    );
    const [answers, exit] = await Promise.all([results, c.exited]);
    const ackedTexts = answers.flatMap((a, i) => (a.status === 201 ? [`t${String(i)}`] : []));
    const rows = SESSIONS.flatMap((key) => userRows(home, key)).map((r) => String(r.content));
    const present = new Set(rows);
    const lost = ackedTexts.filter((t) => !present.has(t)).length;
    const duplicates = rows.length - present.size;
    const by = (s: number): number => answers.filter((a) => a.status === s).length;
    console.log(
      `SIGTERM during load: 3,000 sent, acked ${String(ackedTexts.length)}, 503 ${String(by(503))}, unanswered ${String(by(0))}, ` +
        `rows ${String(rows.length)}, lost ${String(lost)}, duplicates ${String(duplicates)}, exit ${String(exit.code)}`,
    );
    expect(exit.code).toBe(143);
    expect(ackedTexts.length).toBeGreaterThanOrEqual(300);
    expect(lost).toBe(0);
    expect(duplicates).toBe(0);
    expect(by(201) + by(503) + by(0)).toBe(3000);
  });
});
