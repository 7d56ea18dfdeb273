import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { modeOf } from '@hermes/test-utils';
import { renderConversation, saveConversation, saveConversationSync, type ConversationSnapshot } from '../src/index.js';
import { CONVERSATION, freshHome, ls, UNMANAGED } from './helpers.js';

// A frozen local time: the default name is built from local fields, so the literal holds in any time zone.
const FROZEN = new Date(2025, 0, 2, 3, 4, 5, 678);

function variant(text: string): ConversationSnapshot {
  return { ...CONVERSATION, messages: [{ role: 'user', content: text, timestamp: 1735787046 }] };
}

describe('overwrite and same-second saves', () => {
  it('an explicit file name replaces an existing 0644 snapshot: new content, re-tightened to 0600', async () => {
    const home = freshHome();
    const saved = path.join(home, 'sessions', 'saved');
    fs.mkdirSync(saved, { recursive: true });
    const target = path.join(saved, 'weather.json');
    fs.writeFileSync(target, '{"old": true}\n');
    fs.chmodSync(target, 0o644);
    expect(modeOf(target)).toBe('0644');

    const r = await saveConversation(CONVERSATION, { home, filename: 'weather.json', env: UNMANAGED });
    expect(r.path).toBe(target);
    expect(r.mode).toBe(0o600);
    expect(modeOf(target)).toBe('0600');
    expect(fs.readFileSync(target, 'utf8')).toBe(renderConversation(CONVERSATION));
    expect(ls(saved)).toEqual(['weather.json']);
  });

  it('the synchronous form re-tightens too', () => {
    const home = freshHome();
    const saved = path.join(home, 'sessions', 'saved');
    fs.mkdirSync(saved, { recursive: true });
    const target = path.join(saved, 'notes.md');
    fs.writeFileSync(target, 'old\n');
    fs.chmodSync(target, 0o644);
    const r = saveConversationSync(CONVERSATION, { home, filename: 'notes.md', env: UNMANAGED });
    expect([r.format, modeOf(target), fs.readFileSync(target, 'utf8')]).toEqual(['md', '0600', renderConversation(CONVERSATION, 'md')]);
  });

  it('two default-name saves in one frozen second give two distinct files, both intact', async () => {
    const home = freshHome();
    const first = await saveConversation(variant('first'), { home, now: FROZEN, env: UNMANAGED });
    const second = await saveConversation(variant('second'), { home, now: FROZEN, env: UNMANAGED });
    const saved = path.join(home, 'sessions', 'saved');
    expect(first.path).toBe(path.join(saved, 'hermes_conversation_20250102_030405.json'));
    expect(second.path).toBe(path.join(saved, 'hermes_conversation_20250102_030405_2.json'));
    expect(ls(saved)).toEqual(['hermes_conversation_20250102_030405.json', 'hermes_conversation_20250102_030405_2.json']);
    expect(fs.readFileSync(first.path, 'utf8')).toBe(renderConversation(variant('first')));
    expect(fs.readFileSync(second.path, 'utf8')).toBe(renderConversation(variant('second')));
    expect([modeOf(first.path), modeOf(second.path)]).toEqual(['0600', '0600']);
  });

  it('concurrent saves in one second never clobber each other', async () => {
    const home = freshHome();
    const texts = ['a', 'b', 'c', 'd', 'e', 'f'];
    const results = await Promise.all(texts.map((t) => saveConversation(variant(t), { home, now: FROZEN, format: 'md', env: UNMANAGED })));
    const saved = path.join(home, 'sessions', 'saved');
    expect(ls(saved)).toEqual([
      'hermes_conversation_20250102_030405.md',
      'hermes_conversation_20250102_030405_2.md',
      'hermes_conversation_20250102_030405_3.md',
      'hermes_conversation_20250102_030405_4.md',
      'hermes_conversation_20250102_030405_5.md',
      'hermes_conversation_20250102_030405_6.md',
    ]);
    expect(results.map((r) => fs.readFileSync(r.path, 'utf8'))).toEqual(texts.map((t) => renderConversation(variant(t), 'md')));
  });

  it('a same-second 0644 snapshot left by an older Hermes is not replaced: the new one takes _2', () => {
    const home = freshHome();
    const saved = path.join(home, 'sessions', 'saved');
    fs.mkdirSync(saved, { recursive: true });
    const legacy = path.join(saved, 'hermes_conversation_20250102_030405.json');
    fs.writeFileSync(legacy, '{"legacy": true}\n');
    fs.chmodSync(legacy, 0o644);
    const r = saveConversationSync(CONVERSATION, { home, now: FROZEN, env: UNMANAGED });
    expect(r.path).toBe(path.join(saved, 'hermes_conversation_20250102_030405_2.json'));
    expect([fs.readFileSync(legacy, 'utf8'), modeOf(legacy), modeOf(r.path)]).toEqual(['{"legacy": true}\n', '0644', '0600']);
  });
});
