// M1, M1-async: one MoA trace line per turn (@hermes/moa-trace, open per call as the tracer does), against the
// same record serialised inline and appended with fs.appendFileSync (what a plain writer of the format does).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadEnvironment, setLogger, silentLogger } from '../../packages/fs-policy/dist/index.js';
import { createMoaTracer } from '../../packages/moa-trace/dist/index.js';
import { compare } from './harness.mjs';

setLogger(silentLogger);

/** Turns per sample: enough for a stable per-turn median, few enough to keep the file small. */
const TURNS = 500;

/** A realistic turn: three advisors and the aggregator, each with a system prompt and a short history (~12 KiB). */
export function moaTurn(i = 0) {
  const history = [
    { role: 'system', content: 'You are a careful advisor. '.repeat(12) },
    { role: 'user', content: `Question ${i}: how should the release be staged? `.repeat(8) },
    { role: 'assistant', content: 'An earlier answer with some detail. '.repeat(10) },
    { role: 'user', content: 'A follow-up that asks for the trade-offs. '.repeat(6) },
  ];
  const reference = (label) => ({
    label,
    model: `model-${label}`,
    provider: 'provider',
    temperature: 0.6,
    inputMessages: history,
    output: `Advisor ${label} answers in a few paragraphs. `.repeat(20),
    usage: { inputTokens: 812, outputTokens: 240, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
    costUsd: 0.0012,
    costStatus: 'estimated',
    costSource: 'table',
  });
  return {
    sessionId: '20251130_064200_ab12cd',
    preset: 'default',
    references: [reference('a'), reference('b'), reference('c')],
    aggregator: { label: 'agg', model: 'model-agg', provider: 'provider', temperature: 0.4, inputMessages: history, output: 'The aggregate answer. '.repeat(30), streamed: false },
  };
}

/** The on-disk record of `turn` built inline (same fields and order as the tracer writes, no privacy filter). */
function inlineRecord(turn, nowMs) {
  const usage = (u) => ({ input_tokens: u.inputTokens, output_tokens: u.outputTokens, cache_read_tokens: u.cacheReadTokens, cache_write_tokens: u.cacheWriteTokens, reasoning_tokens: u.reasoningTokens });
  const a = turn.aggregator;
  return {
    ts: nowMs / 1000,
    session_id: turn.sessionId,
    preset: turn.preset,
    references: turn.references.map((r) => ({
      label: r.label, model: r.model, provider: r.provider, temperature: r.temperature, input_messages: r.inputMessages, output: r.output,
      usage: usage(r.usage), cost_usd: r.costUsd, cost_status: r.costStatus, cost_source: r.costSource,
    })),
    aggregator: { label: a.label, model: a.model, provider: a.provider, temperature: a.temperature, input_messages: a.inputMessages, output: a.output, streamed: a.streamed, output_location: 'inline' },
  };
}

/** The MoA cases, in the shape of the other case files (run.mjs wires them in as the `moa` group). */
export async function moaCases(workRoot, { samples }) {
  const home = path.join(workRoot, 'home');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false' } });
  const turn = moaTurn();
  const tracer = createMoaTracer({ home, saveTraces: true, env });
  const file = tracer.pathFor(turn.sessionId);
  const baseDir = path.join(home, 'plain');
  fs.mkdirSync(baseDir, { mode: 0o700 });
  const baseFile = path.join(baseDir, path.basename(file));
  const fresh = (f) => () => {
    fs.rmSync(f, { force: true });
    return f;
  };
  const baseline = {
    name: 'inline record + JSON.stringify + fs.appendFileSync',
    setup: fresh(baseFile),
    run: (f) => {
      for (let i = 0; i < TURNS; i++) fs.appendFileSync(f, `${JSON.stringify(inlineRecord(turn, Date.now()))}\n`, { mode: 0o600 });
    },
  };
  const check = (r) => {
    if (!r.written) throw r.error ?? new Error('moa trace not written');
  };
  const results = [];
  results.push({
    id: 'M1',
    title: `MoA trace per turn (~${Math.round(Buffer.byteLength(JSON.stringify(inlineRecord(turn, 0))) / 1024)} KiB line, open per call), recordSync`,
    target: { op: '<=', ratio: 1.5 },
    unit: 'per turn',
    ...(await compare({
      id: 'M1',
      ours: { name: 'tracer.recordSync', setup: fresh(file), run: () => { for (let i = 0; i < TURNS; i++) check(tracer.recordSync(turn)); } },
      baseline,
      samples,
      ops: TURNS,
    })),
  });
  results.push({
    id: 'M1-async',
    title: 'MoA trace per turn, record (awaited one by one)',
    target: { op: '<=', ratio: 2.0 },
    unit: 'per turn',
    ...(await compare({
      id: 'M1-async',
      ours: { name: 'await tracer.record', setup: fresh(file), run: async () => { for (let i = 0; i < TURNS; i++) check(await tracer.record(turn)); } },
      baseline,
      samples,
      ops: TURNS,
    })),
  });
  return results;
}
