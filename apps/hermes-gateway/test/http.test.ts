/** Input validation (each refusal names the problem), save formats, metrics, session end with its trajectory, MoA traces. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freshHome, startReady } from './helpers.js';

describe('the HTTP surface (real child)', () => {
  it('refusals name the problem; save, end and metrics answer as documented', async () => {
    const home = freshHome();
    const c = await startReady(home, ['--moa-advisors', '2']);
    const send = async (body: string, headers: Record<string, string> = { 'content-type': 'application/json' }, key = 'agent:main:web:h'): Promise<[number, string]> => {
      const res = await fetch(`${c.url}/v1/sessions/${encodeURIComponent(key)}/messages`, { method: 'POST', headers, body });
      const j = (await res.json()) as { error?: { code: string } };
      return [res.status, j.error?.code ?? 'ok'];
    };
    const refusals = [
      await send('{"text":'),
      await send('[1,2]'),
      await send('{"txt":"x"}'),
      await send('{"text":42}'),
      await send('{"text":"   "}'),
      await send(JSON.stringify({ text: 'x'.repeat(40_000) })),
      await send(JSON.stringify({ text: 'x'.repeat(70_000) })),
      await send('{"text":"\\ud800"}'),
      await send('{"text":"x"}', { 'content-type': 'application/json', 'idempotency-key': 'x'.repeat(300) }),
      await send('{"text":"x"}', { 'content-type': 'application/json' }, 'x'.repeat(300)),
    ];
    const ok = await send('{"text":"hi"}');
    await new Promise((r) => setTimeout(r, 300));
    const saves: Record<string, [number, string, string]> = {};
    for (const format of ['json', 'md', 'html', 'pdf']) {
      const res = await fetch(`${c.url}/v1/sessions/agent%3Amain%3Aweb%3Ah/save?format=${format}`, { method: 'POST' });
      saves[format] = [res.status, res.headers.get('content-type') ?? '', (await res.text()).slice(0, 15)];
    }
    const missing = await fetch(`${c.url}/v1/sessions/nobody`);
    const end = (await (await fetch(`${c.url}/v1/sessions/agent%3Amain%3Aweb%3Ah/end`, { method: 'POST' })).json()) as { trajectory: string };
    const metrics = await (await fetch(`${c.url}/metrics`)).text();
    c.proc.kill('SIGTERM');
    const exit = await c.exited;
    const traces = fs.readdirSync(path.join(home, 'moa-traces'));
    console.log(`http: refusals ${refusals.map(([s, code]) => `${String(s)} ${code}`).join(', ')}; ok ${ok.join(' ')}; saves ${JSON.stringify(saves)}; traces ${String(traces.length)}`);
    expect(refusals).toEqual([
      [400, 'FST_ERR_CTP_INVALID_JSON_BODY'],
      [400, 'EINVALID_BODY'],
      [400, 'EMISSING_TEXT'],
      [400, 'EINVALID_TEXT'],
      [400, 'EEMPTY_TEXT'],
      [413, 'ETEXT_TOO_LONG'],
      [413, 'FST_ERR_CTP_BODY_TOO_LARGE'],
      [400, 'EINVALID_TEXT'],
      [400, 'EINVALID_IDEMPOTENCY_KEY'],
      [400, 'EINVALID_KEY'],
    ]);
    expect(ok).toEqual([201, 'ok']);
    expect(saves.json?.slice(0, 2)).toEqual([200, 'application/json; charset=utf-8']);
    expect(saves.md?.[2]).toBe('# Session: gw-8'); // gw- + sha256('agent:main:web:h')
    expect(saves.html?.[2]).toBe('<!DOCTYPE html>');
    expect(saves.pdf?.[0]).toBe(400);
    expect(missing.status).toBe(404);
    expect(fs.readFileSync(end.trajectory, 'utf8').split('\n').filter(Boolean).length).toBe(1);
    expect(metrics).toContain('hermes_gateway_acks_total{durable="committed"} 1\n');
    expect(metrics).toContain('hermes_gateway_commit_fsync_seconds_count');
    expect(metrics).toContain('hermes_gateway_spool_files 0\n');
    expect(traces.length).toBe(1);
    expect(exit.code).toBe(143);
  });
});
