import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { createMoaTracer, type MoaTurn, type PrivacyFilterMode } from '../src/index.js';

const KEY = 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWx';
const MAIL = 'jane.doe@example.com';

const guidance = `[Mixture of Agents reference context]\nref-a: Send ${KEY} to ${MAIL}`;
const aggregatorInput = [
  { role: 'user', content: `Mail ${MAIL} the key ${KEY}` },
  { role: 'user', content: [{ type: 'text', text: guidance }] },
];

const turn: MoaTurn = {
  sessionId: 's1',
  preset: 'trio',
  references: [
    {
      label: 'ref-a',
      model: 'gpt-x',
      provider: 'openai',
      temperature: 0.7,
      inputMessages: [
        { role: 'system', content: 'You advise.' },
        { role: 'user', content: `Mail ${MAIL} the key ${KEY}` },
      ],
      output: `Send ${KEY} to ${MAIL}`,
      usage: { inputTokens: 12, outputTokens: 9 },
      costUsd: 0.001,
      costStatus: 'estimated',
      costSource: 'pricing-table',
    },
  ],
  aggregator: {
    label: 'agg',
    model: 'claude-y',
    provider: 'anthropic',
    temperature: null,
    inputMessages: aggregatorInput,
    output: `Done: ${MAIL}`,
    streamed: false,
  },
};

const RAW_LINE =
  '{"ts":1764489600.123,"session_id":"s1","preset":"trio","references":[{"label":"ref-a","model":"gpt-x","provider":"openai","temperature":0.7,' +
  '"input_messages":[{"role":"system","content":"You advise."},{"role":"user","content":"Mail jane.doe@example.com the key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx"}],' +
  '"output":"Send sk-proj-AbCdEfGhIjKlMnOpQrStUvWx to jane.doe@example.com",' +
  '"usage":{"input_tokens":12,"output_tokens":9,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0},' +
  '"cost_usd":0.001,"cost_status":"estimated","cost_source":"pricing-table"}],' +
  '"aggregator":{"label":"agg","model":"claude-y","provider":"anthropic","temperature":null,' +
  '"input_messages":[{"role":"user","content":"Mail jane.doe@example.com the key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx"},' +
  '{"role":"user","content":[{"type":"text","text":"[Mixture of Agents reference context]\\nref-a: Send sk-proj-AbCdEfGhIjKlMnOpQrStUvWx to jane.doe@example.com"}]}],' +
  '"output":"Done: jane.doe@example.com","streamed":false,"output_location":"inline"}}\n';

const REDACTED_LINE =
  '{"ts":1764489600.123,"session_id":"s1","preset":"trio","references":[{"label":"ref-a","model":"gpt-x","provider":"openai","temperature":0.7,' +
  '"input_messages":[{"role":"system","content":"You advise."},{"role":"user","content":"Mail [redacted email] the key sk-pro...UvWx"}],' +
  '"output":"Send sk-pro...UvWx to [redacted email]",' +
  '"usage":{"input_tokens":12,"output_tokens":9,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0},' +
  '"cost_usd":0.001,"cost_status":"estimated","cost_source":"pricing-table"}],' +
  '"aggregator":{"label":"agg","model":"claude-y","provider":"anthropic","temperature":null,' +
  '"input_messages":[{"role":"user","content":"Mail [redacted email] the key sk-pro...UvWx"},' +
  '{"role":"user","content":[{"type":"text","text":"[Mixture of Agents reference context]\\nref-a: Send sk-pro...UvWx to [redacted email]"}]}],' +
  '"output":"Done: [redacted email]","streamed":false,"output_location":"inline"}}\n';

async function recordWith(privacyFilter: PrivacyFilterMode) {
  const home = path.join(tempRoot(), 'home');
  const tracer = createMoaTracer({ home, saveTraces: true, privacyFilter, clock: () => 1_764_489_600_123 });
  const result = await tracer.record(turn);
  return { result, file: fs.readFileSync(path.join(home, 'moa-traces', 's1.jsonl'), 'utf8') };
}

describe('privacy filter: off vs display vs full', () => {
  it('off: the file, the UI copy and the live input are raw', async () => {
    const { result, file } = await recordWith('off');
    expect(file).toBe(RAW_LINE);
    expect(result.uiEvent).toEqual({
      preset: 'trio',
      references: [{ label: 'ref-a', model: 'gpt-x', provider: 'openai', output: `Send ${KEY} to ${MAIL}` }],
    });
    expect(result.aggregatorInputMessages).toBe(aggregatorInput);
  });

  it('display: file and UI copy redacted; the live aggregator input is returned untouched', async () => {
    const { result, file } = await recordWith('display');
    expect(file).toBe(REDACTED_LINE);
    expect(result.uiEvent).toEqual({
      preset: 'trio',
      references: [{ label: 'ref-a', model: 'gpt-x', provider: 'openai', output: 'Send sk-pro...UvWx to [redacted email]' }],
    });
    expect(result.aggregatorInputMessages).toBe(aggregatorInput);
    expect(aggregatorInput[0]).toEqual({ role: 'user', content: `Mail ${MAIL} the key ${KEY}` });
  });

  it('full: file and UI copy redacted, and the live aggregator input is a redacted copy', async () => {
    const { result, file } = await recordWith('full');
    expect(file).toBe(REDACTED_LINE);
    expect(result.uiEvent.references[0]?.output).toBe('Send sk-pro...UvWx to [redacted email]');
    expect(result.aggregatorInputMessages).not.toBe(aggregatorInput);
    expect(result.aggregatorInputMessages).toEqual([
      { role: 'user', content: 'Mail [redacted email] the key sk-pro...UvWx' },
      {
        role: 'user',
        content: [{ type: 'text', text: '[Mixture of Agents reference context]\nref-a: Send sk-pro...UvWx to [redacted email]' }],
      },
    ]);
    // The caller's objects are never mutated.
    expect(aggregatorInput[1]).toEqual({ role: 'user', content: [{ type: 'text', text: guidance }] });
    expect(turn.references[0]?.output).toBe(`Send ${KEY} to ${MAIL}`);
  });

  it('the filter applies before the call too, and with tracing disabled nothing is written', () => {
    const home = path.join(tempRoot(), 'home');
    const display = createMoaTracer({ home, privacyFilter: 'display' });
    const full = createMoaTracer({ home, privacyFilter: 'full' });
    expect(display.liveAggregatorInput(aggregatorInput)).toBe(aggregatorInput);
    expect(full.liveAggregatorInput(aggregatorInput)[0]).toEqual({ role: 'user', content: 'Mail [redacted email] the key sk-pro...UvWx' });
    expect(display.uiEvent(turn).references[0]?.output).toBe('Send sk-pro...UvWx to [redacted email]');
    expect(display.recordSync(turn).written).toBe(false);
    expect(fs.existsSync(home)).toBe(false);
  });

  it('code-review text passes the filter byte-identical', async () => {
    const home = path.join(tempRoot(), 'home');
    const tracer = createMoaTracer({ home, saveTraces: true, privacyFilter: 'display' });
    const review = 'MAX_TOKENS=4096 at line 42, commit 3f2a9c1, v1.2.3, 10.0.0.1, "apiKey": "test-fixture"';
    const r = await tracer.record({ ...turn, references: [{ ...turn.references[0], label: 'r', model: 'm', provider: 'p', inputMessages: [], output: review }] });
    const rec = JSON.parse(fs.readFileSync(r.path ?? '', 'utf8')) as { references: { output: string }[] };
    expect(rec.references[0]?.output).toBe(review);
  });
});
