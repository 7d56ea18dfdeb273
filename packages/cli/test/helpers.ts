import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempRoot } from '@hermes/test-utils';
import type { ConversationSnapshot } from '../src/index.js';

export const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** The variables an in-process save resolves the install from: unmanaged, no HERMES_HOME_MODE. */
export const UNMANAGED = { HERMES_MANAGED: 'false' } as const;

/** A fresh, not yet existing home under a fresh temp root. */
export function freshHome(): string {
  return path.join(tempRoot('hermes-cli-test-'), 'home');
}

/** Entry names of a directory, sorted. */
export function ls(dir: string): string[] {
  return fs.readdirSync(dir).sort();
}

/** A small conversation with a tool call (2025-01-02T03:04:05Z onwards). */
export const CONVERSATION: ConversationSnapshot = {
  id: '20250102_030405_abc123',
  model: 'anthropic/claude-sonnet-4',
  started_at: 1735787045,
  title: 'Weather check',
  source: 'cli',
  messages: [
    { role: 'system', content: 'You are Hermes.', timestamp: 1735787045 },
    { role: 'user', content: 'What is the weather in Paris?', timestamp: 1735787046 },
    {
      role: 'assistant',
      content: 'Let me check.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      timestamp: 1735787047,
    },
    { role: 'tool', content: '{"temp_c": 18, "sky": "clear"}', tool_call_id: 'call_1', tool_name: 'get_weather', timestamp: 1735787048 },
    { role: 'assistant', content: 'It is 18 °C and clear in Paris.', timestamp: 1735787049 },
  ],
};
