import { Buffer } from 'node:buffer';

/**
 * Returns a deep copy of `value` in which every string — object property values, array items, Map
 * values and Set members, at any depth — has been passed through `redactor`. Object keys and Map
 * keys are copied unchanged.
 *
 * What is copied and how:
 * - strings: `redactor(s)`; other primitives (numbers, booleans, bigint, symbols, null,
 *   undefined) as they are;
 * - arrays (holes become `undefined`), plain objects (prototype `Object.prototype` or `null`; own
 *   enumerable string and symbol keys, a `__proto__` key included, copied as a data property), `Map`
 *   and `Set`: new containers with redacted contents;
 * - `Date`: a new `Date` with the same time; `Buffer`, typed arrays, `DataView` and `ArrayBuffer`: a
 *   byte-for-byte copy (binary data is not text and is not redacted);
 * - anything else (class instances, functions, errors, promises, regexps, ...): the same reference,
 *   not traversed. Convert such values to plain data first if their contents need redacting.
 *
 * Guarantees: the input is never mutated; an object reached twice through different paths is
 * copied once and shared in the same way in the result; a cycle throws a `TypeError` naming the
 * path where it closes, instead of recursing forever.
 */
export function redactValue<T>(value: T, redactor: (s: string) => string): T {
  return copy(value, redactor, new Map(), new Set(), '$') as T;
}

function copy(
  value: unknown,
  redactor: (s: string) => string,
  done: Map<object, unknown>,
  active: Set<object>,
  path: string,
): unknown {
  if (typeof value === 'string') {
    return redactor(value);
  }
  if (typeof value !== 'object' || value === null) {
    return value;
  }
  const finished = done.get(value);
  if (finished !== undefined || done.has(value)) {
    return finished;
  }
  if (active.has(value)) {
    throw new TypeError(`redactValue: cyclic reference at ${path}`);
  }
  active.add(value);
  const result = copyObject(value, redactor, done, active, path);
  active.delete(value);
  done.set(value, result);
  return result;
}

function copyObject(
  value: object,
  redactor: (s: string) => string,
  done: Map<object, unknown>,
  active: Set<object>,
  path: string,
): unknown {
  if (Array.isArray(value)) {
    const items: readonly unknown[] = value;
    const out: unknown[] = [];
    for (let i = 0; i < items.length; i += 1) {
      out.push(copy(items[i], redactor, done, active, `${path}[${i}]`));
    }
    return out;
  }
  if (value instanceof Map) {
    const out = new Map<unknown, unknown>();
    for (const [key, item] of value as Map<unknown, unknown>) {
      out.set(key, copy(item, redactor, done, active, `${path}.get(${describeKey(key)})`));
    }
    return out;
  }
  if (value instanceof Set) {
    const out = new Set<unknown>();
    let index = 0;
    for (const item of value as Set<unknown>) {
      out.add(copy(item, redactor, done, active, `${path}{${index}}`));
      index += 1;
    }
    return out;
  }
  if (value instanceof Date) {
    return new Date(value.getTime());
  }
  if (Buffer.isBuffer(value)) {
    return Buffer.from(value);
  }
  if (value instanceof ArrayBuffer) {
    return value.slice(0);
  }
  if (value instanceof DataView) {
    return new DataView(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  }
  if (ArrayBuffer.isView(value)) {
    return copyTypedArray(value);
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    return value;
  }
  const out: Record<PropertyKey, unknown> = proto === null ? (Object.create(null) as Record<PropertyKey, unknown>) : {};
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (descriptor?.enumerable !== true) {
      continue;
    }
    const item: unknown = (value as Record<PropertyKey, unknown>)[key];
    Object.defineProperty(out, key, {
      value: copy(item, redactor, done, active, `${path}${describePropertyKey(key)}`),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

interface SliceableView {
  slice(): unknown;
}

function copyTypedArray(view: ArrayBufferView): unknown {
  // Every typed array (Uint8Array, Float64Array, BigInt64Array, ...) has a copying slice().
  return (view as unknown as SliceableView).slice();
}

function describePropertyKey(key: string | symbol): string {
  if (typeof key === 'symbol') {
    return `[${key.toString()}]`;
  }
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

function describeKey(key: unknown): string {
  if (typeof key === 'string') {
    return JSON.stringify(key);
  }
  if (typeof key === 'number' || typeof key === 'boolean' || typeof key === 'bigint') {
    return String(key);
  }
  return typeof key;
}
