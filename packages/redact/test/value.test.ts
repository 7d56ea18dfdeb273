import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { redactPrivacy, redactSecrets, redactValue } from '../src/index.js';
import { BODY36, k } from './corpus.js';

const upper = (s: string): string => s.toUpperCase();

describe('redactValue', () => {
  it('redacts every string in nested objects and arrays, leaving keys alone', () => {
    const session = {
      id: 'sess-1',
      model: 'claude',
      started_at: 1732960245.5,
      messages: [
        { role: 'user', content: `my key is ${k('sk-proj-', BODY36)}`, ts: 1 },
        { role: 'assistant', content: ['mail jane.doe@example.com', { text: 'call 555-123-4567' }], ts: 2 },
        { role: 'tool', content: null, ok: true },
      ],
      [k('ghp_', BODY36)]: 'keys are not redacted',
    };

    const out = redactValue(session, redactPrivacy);

    expect(out).toEqual({
      id: 'sess-1',
      model: 'claude',
      started_at: 1732960245.5,
      messages: [
        { role: 'user', content: 'my key is sk-pro...Q7r8', ts: 1 },
        { role: 'assistant', content: ['mail [redacted email]', { text: 'call [redacted phone]' }], ts: 2 },
        { role: 'tool', content: null, ok: true },
      ],
      [k('ghp_', BODY36)]: 'keys are not redacted',
    });
  });

  it('returns a copy and never mutates the input', () => {
    const input = { a: ['x-api-key: 0123456789abcdef0123'], b: { c: 'DB_PASSWORD=hunter2' } };
    const snapshot = structuredClone(input);

    const out = redactValue(input, redactSecrets);

    expect(input).toEqual(snapshot);
    expect(out).not.toBe(input);
    expect(out.a).not.toBe(input.a);
    expect(out.b).not.toBe(input.b);
    expect(out).toEqual({ a: ['x-api-key: 012345...0123'], b: { c: 'DB_PASSWORD=***' } });
  });

  it('applies the redactor to a top-level string and passes other primitives through', () => {
    expect(redactValue('abc', upper)).toBe('ABC');
    expect(redactValue(42, upper)).toBe(42);
    expect(redactValue(null, upper)).toBeNull();
    expect(redactValue<unknown>(undefined, upper)).toBeUndefined();
    expect(redactValue(true, upper)).toBe(true);
    expect(redactValue(10n, upper)).toBe(10n);
  });

  it('copies Dates and binary data without treating them as text', () => {
    const when = new Date('2026-11-30T12:30:45.000Z');
    const bytes = Buffer.from('Authorization: Bearer abc123', 'utf8');
    const floats = new Float64Array([1.5, 2.5]);
    const input = { when, bytes, floats, raw: new Uint8Array([1, 2, 3]).buffer };

    const out = redactValue(input, upper);

    expect(out.when).toBeInstanceOf(Date);
    expect(out.when).not.toBe(when);
    expect(out.when.toISOString()).toBe('2026-11-30T12:30:45.000Z');
    expect(Buffer.isBuffer(out.bytes)).toBe(true);
    expect(out.bytes).not.toBe(bytes);
    expect(out.bytes.toString('utf8')).toBe('Authorization: Bearer abc123');
    expect(out.floats).toBeInstanceOf(Float64Array);
    expect(out.floats).not.toBe(floats);
    expect(Array.from(out.floats)).toEqual([1.5, 2.5]);
    expect(out.raw).toBeInstanceOf(ArrayBuffer);
    expect(Array.from(new Uint8Array(out.raw))).toEqual([1, 2, 3]);
  });

  it('redacts Map values and Set members, keeping Map keys', () => {
    const input = new Map<string, unknown>([
      ['token', 'x'],
      ['list', new Set(['a', 'b'])],
    ]);

    const out = redactValue(input, upper);

    expect(out).toBeInstanceOf(Map);
    expect([...out.keys()]).toEqual(['token', 'list']);
    expect(out.get('token')).toBe('X');
    expect(out.get('list')).toEqual(new Set(['A', 'B']));
  });

  it('keeps null-prototype objects, symbol keys and a "__proto__" own key', () => {
    const bare = Object.create(null) as Record<string, unknown>;
    bare.note = 'n';
    const tag = Symbol('tag');
    const parsed = JSON.parse('{"__proto__": "p", "x": "y"}') as Record<string, unknown>;
    const input = { bare, [tag]: 's', parsed };

    const out = redactValue(input, upper);

    expect(Object.getPrototypeOf(out.bare)).toBeNull();
    expect(out.bare.note).toBe('N');
    expect(out[tag]).toBe('S');
    expect(Object.getPrototypeOf(out.parsed)).toBe(Object.prototype);
    expect(Object.keys(out.parsed)).toEqual(['__proto__', 'x']);
    expect(Object.getOwnPropertyDescriptor(out.parsed, '__proto__')?.value).toBe('P');
    expect(out.parsed.x).toBe('Y');
  });

  it('returns class instances and functions as they are', () => {
    class Secretive {
      readonly value = 'inside';
    }
    const instance = new Secretive();
    const fn = (): string => 'f';
    const error = new Error('message');

    const out = redactValue({ instance, fn, error }, upper);

    expect(out.instance).toBe(instance);
    expect(out.fn).toBe(fn);
    expect(out.error).toBe(error);
  });

  it('copies a shared object once and keeps it shared', () => {
    const shared = { text: 'same' };
    const out = redactValue({ a: shared, b: [shared] }, upper);

    expect(out.a).toEqual({ text: 'SAME' });
    expect(out.b[0]).toBe(out.a);
  });

  it('handles wide shared structures without blowing up', () => {
    let node: unknown = { leaf: 'x' };
    for (let i = 0; i < 40; i += 1) {
      node = { left: node, right: node };
    }
    const out = redactValue(node, upper) as { left: unknown; right: unknown };
    expect(out.left).toBe(out.right);
  });

  it('throws a TypeError naming the path on a cycle', () => {
    const root: { items: unknown[] } = { items: [] };
    root.items.push({ back: root });

    expect(() => redactValue(root, upper)).toThrow(TypeError);
    expect(() => redactValue(root, upper)).toThrow('redactValue: cyclic reference at $.items[0].back');
  });

  it('names Map entries and odd keys in the cycle path', () => {
    const map = new Map<string, unknown>();
    const holder = { 'odd key': map };
    map.set('self', holder);

    expect(() => redactValue(holder, upper)).toThrow('redactValue: cyclic reference at $["odd key"].get("self")');
  });
});
