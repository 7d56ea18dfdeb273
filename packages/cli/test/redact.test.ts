import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderConversation, saveConversation, type ConversationSnapshot } from '../src/index.js';
import { freshHome, UNMANAGED } from './helpers.js';

const KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz123456';
const GITHUB = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';

const SECRETIVE: ConversationSnapshot = {
  id: 's-redact',
  model: 'm',
  started_at: 1735787045,
  title: `debugging ${KEY}`,
  messages: [
    { role: 'user', content: `my key is ${KEY}, mail alice@example.com or +14155550123` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'gh', arguments: JSON.stringify({ token: GITHUB }) } }],
    },
    { role: 'tool', tool_name: 'gh', content: [{ type: 'text', text: `echo ${GITHUB}` }] },
  ],
};

describe('redact: every string through @hermes/redact secret redaction (not PII)', () => {
  it('JSON: secrets masked in content, parts, tool-call arguments and the title; e-mail and phone kept', async () => {
    const r = await saveConversation(SECRETIVE, { home: freshHome(), redact: true, env: UNMANAGED });
    expect(r.redacted).toBe(true);
    const saved = JSON.parse(fs.readFileSync(r.path, 'utf8')) as unknown;
    expect(saved).toEqual({
      id: 's-redact',
      model: 'm',
      started_at: 1735787045,
      title: 'debugging sk-pro...3456',
      messages: [
        { role: 'user', content: 'my key is sk-pro...3456, mail alice@example.com or +14155550123' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'gh', arguments: '{"token":"ghp_ab...6789"}' } }],
        },
        { role: 'tool', tool_name: 'gh', content: [{ type: 'text', text: 'echo ghp_ab...6789' }] },
      ],
    });
  });

  it('Markdown and HTML carry no secret either; the input is not mutated', () => {
    for (const format of ['md', 'html'] as const) {
      const text = renderConversation(SECRETIVE, format, { redact: true });
      expect([format, text.includes(KEY), text.includes(GITHUB), text.includes('sk-pro...3456'), text.includes('ghp_ab...6789')]).toEqual([
        format,
        false,
        false,
        true,
        true,
      ]);
    }
    expect(SECRETIVE.messages[0]?.content).toBe(`my key is ${KEY}, mail alice@example.com or +14155550123`);
  });

  it('without redact the snapshot is full fidelity (the default)', async () => {
    const r = await saveConversation(SECRETIVE, { home: freshHome(), format: 'md', env: UNMANAGED });
    expect(r.redacted).toBe(false);
    const text = fs.readFileSync(r.path, 'utf8');
    expect([text.includes(KEY), text.includes(GITHUB)]).toEqual([true, true]);
  });
});
