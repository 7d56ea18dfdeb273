import { describe, expect, it } from 'vitest';
import { jsonProblem, parseJsonTolerant } from '../src/index.js';

describe('parseJsonTolerant', () => {
  it('reads standard JSON and the NaN / Infinity / -Infinity tokens Python writes', () => {
    expect(parseJsonTolerant('{"a": 1.5, "b": [true, null], "c": "NaN"}')).toEqual({ a: 1.5, b: [true, null], c: 'NaN' });
    const v = parseJsonTolerant('{"ts": NaN, "x": [Infinity, -Infinity, -1e3], "s": "a\\"b\\u00e9"}') as Record<string, unknown>;
    expect(Number.isNaN(v.ts)).toBe(true);
    expect(v.x).toEqual([Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1000]);
    expect(v.s).toBe('a"b\u00e9');
  });

  it('keeps a "__proto__" key as data', () => {
    const v = parseJsonTolerant('{"__proto__": {"polluted": true}, "n": NaN}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__', 'n']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each(['{"a": ', '{"a": NaNx}', '[1, 2', '{"a": 1} trailing', 'nan', '"unterminated'])('refuses %j', (text) => {
    expect(() => parseJsonTolerant(text)).toThrow(SyntaxError);
  });
});

describe('jsonProblem', () => {
  it('accepts what JSON represents faithfully', () => {
    expect(jsonProblem({ a: [1, 'x', null, { b: false }], skipped: undefined, when: new Date(0) })).toBeUndefined();
    const shared = { x: 1 };
    expect(jsonProblem({ a: shared, b: shared })).toBeUndefined();
  });

  it.each([
    [{ n: 1n }, 'BigInt at $.n'],
    [{ a: [1, undefined] }, 'undefined at $.a[1]'],
    [{ f: Number.POSITIVE_INFINITY }, 'non-finite number Infinity at $.f'],
    [{ s: Symbol('x') }, 'symbol at $.s'],
    [{ set: new Set([1]) }, 'Set at $.set (not a plain object)'],
  ])('refuses %o: %s', (value, problem) => {
    expect(jsonProblem(value)).toBe(problem);
  });
});
