/**
 * JSON as the spool needs it: a reader that also accepts Python's `NaN`, `Infinity` and `-Infinity` tokens
 * (Python's `json.dump` writes them for non-finite floats), and a strict check run before a payload is
 * written, so a value JSON cannot represent faithfully fails instead of being silently changed.
 */

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** How deeply arrays and objects may nest in a spool file: far beyond any payload, far below the JS stack. */
export const MAX_JSON_DEPTH = 512;

/** A document nested deeper than {@link MAX_JSON_DEPTH}: refused with a code, never a stack overflow. */
export class JsonTooDeepError extends SyntaxError {
  readonly code = 'ETOO_DEEP';
  constructor(position: number) {
    super(`nested deeper than ${String(MAX_JSON_DEPTH)} levels at position ${String(position)}`);
    this.name = 'JsonTooDeepError';
  }
}

class Parser {
  #i = 0;
  #depth = 0;
  constructor(private readonly text: string) {}

  parseDocument(): unknown {
    const value = this.#value();
    this.#ws();
    if (this.#i !== this.text.length) this.#fail('unexpected data after the JSON value');
    return value;
  }

  #fail(what: string): never {
    throw new SyntaxError(`${what} at position ${this.#i}`);
  }

  #ws(): void {
    while (this.#i < this.text.length) {
      const c = this.text.charCodeAt(this.#i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      this.#i++;
    }
  }

  #literal(word: string, value: unknown): unknown {
    if (!this.text.startsWith(word, this.#i)) this.#fail('unexpected token');
    this.#i += word.length;
    return value;
  }

  #value(): unknown {
    this.#ws();
    const c = this.text[this.#i];
    switch (c) {
      case '{':
        return this.#object();
      case '[':
        return this.#array();
      case '"':
        return this.#string();
      case 't':
        return this.#literal('true', true);
      case 'f':
        return this.#literal('false', false);
      case 'n':
        return this.#literal('null', null);
      case 'N':
        return this.#literal('NaN', Number.NaN);
      case 'I':
        return this.#literal('Infinity', Number.POSITIVE_INFINITY);
      case undefined:
        return this.#fail('unexpected end of input');
      default:
        if (c === '-' && this.text.startsWith('-Infinity', this.#i)) {
          return this.#literal('-Infinity', Number.NEGATIVE_INFINITY);
        }
        return this.#number();
    }
  }

  #number(): number {
    NUMBER.lastIndex = this.#i;
    const m = NUMBER.exec(this.text);
    if (m === null) this.#fail('unexpected token');
    this.#i += m[0].length;
    return Number(m[0]);
  }

  #string(): string {
    const start = this.#i;
    this.#i++;
    for (;;) {
      const c = this.text.charCodeAt(this.#i);
      if (Number.isNaN(c)) this.#fail('unterminated string');
      if (c === 0x22) break;
      if (c === 0x5c) this.#i++;
      else if (c < 0x20) this.#fail('control character in string');
      this.#i++;
    }
    this.#i++;
    // The standard parser decodes the escapes of the exact slice.
    return JSON.parse(this.text.slice(start, this.#i)) as string;
  }

  #enter(): void {
    if (++this.#depth > MAX_JSON_DEPTH) throw new JsonTooDeepError(this.#i);
  }

  #array(): unknown[] {
    this.#enter();
    this.#i++;
    const out: unknown[] = [];
    this.#ws();
    if (this.text[this.#i] === ']') {
      this.#i++;
      this.#depth--;
      return out;
    }
    for (;;) {
      out.push(this.#value());
      this.#ws();
      const c = this.text[this.#i];
      this.#i++;
      if (c === ']') {
        this.#depth--;
        return out;
      }
      if (c !== ',') this.#fail("expected ',' or ']'");
    }
  }

  #object(): Record<string, unknown> {
    this.#enter();
    this.#i++;
    const out: Record<string, unknown> = {};
    this.#ws();
    if (this.text[this.#i] === '}') {
      this.#i++;
      this.#depth--;
      return out;
    }
    for (;;) {
      this.#ws();
      if (this.text[this.#i] !== '"') this.#fail('expected a property name');
      const key = this.#string();
      this.#ws();
      if (this.text[this.#i] !== ':') this.#fail("expected ':'");
      this.#i++;
      const value = this.#value();
      // defineProperty: a "__proto__" key is data, as with JSON.parse, never a prototype change.
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      this.#ws();
      const c = this.text[this.#i];
      this.#i++;
      if (c === '}') {
        this.#depth--;
        return out;
      }
      if (c !== ',') this.#fail("expected ',' or '}'");
    }
  }
}

/**
 * Parses JSON, also accepting the `NaN`, `Infinity` and `-Infinity` tokens Python writes. Standard JSON takes
 * the fast path; only text the standard parser refuses goes through the tolerant one. Throws SyntaxError.
 */
export function parseJsonTolerant(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    return new Parser(text).parseDocument();
  }
  if (typeof value === 'object' && value !== null) checkDepth(text);
  return value;
}

/**
 * Throws {@link JsonTooDeepError} when the brackets of `text` (a document JSON.parse accepted) nest deeper than
 * {@link MAX_JSON_DEPTH}: what reads a payload afterwards may recurse. Iterative; strings are skipped. Cheap when the
 * document has fewer brackets than the limit (then it cannot be that deep).
 */
function checkDepth(text: string): void {
  let brackets = 0;
  for (let i = text.indexOf('['); i !== -1 && brackets <= MAX_JSON_DEPTH; i = text.indexOf('[', i + 1)) brackets++;
  for (let i = text.indexOf('{'); i !== -1 && brackets <= MAX_JSON_DEPTH; i = text.indexOf('{', i + 1)) brackets++;
  if (brackets <= MAX_JSON_DEPTH) return;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string (JSON.parse accepted it, so it is terminated).
      for (i++; text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) throw new JsonTooDeepError(i);
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  const ctor = (value as { constructor?: { name?: unknown } }).constructor;
  return typeof ctor?.name === 'string' ? ctor.name : 'object';
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Returns why `value` cannot be written as JSON without loss (a BigInt, a cycle, a non-finite number, a
 * function or symbol, a Map/Set/class instance without `toJSON`), naming where it sits; or undefined when
 * it is fine. Properties whose value is `undefined` are allowed: JSON omits them, which loses nothing.
 */
export function jsonProblem(value: unknown, where = '$'): string | undefined {
  // The walk runs once per payload planned (100,000 at a large stop): it keeps no location while it descends and
  // builds the location of a problem only on the way back up, from the keys of the path it failed on.
  const seen = new Set<object>();
  const path: (string | number)[] = [];
  const problemOf = (v: unknown, inArray: boolean): string | undefined => {
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return undefined;
      case 'number':
        return Number.isFinite(v) ? undefined : `non-finite number ${String(v)}`;
      case 'bigint':
        return 'BigInt';
      case 'undefined':
        return inArray ? 'undefined' : undefined;
      case 'function':
      case 'symbol':
        return typeof v;
      case 'object':
        break;
    }
    if (v === null) return undefined;
    const obj = v;
    const toJSON = (obj as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return problemOf((toJSON as (key: string) => unknown).call(obj, ''), inArray);
    if (seen.has(obj)) return 'circular reference';
    seen.add(obj);
    try {
      if (Array.isArray(obj)) {
        for (let i = 0; i < obj.length; i++) {
          const p = problemOf(obj[i], true);
          if (p !== undefined) {
            path.push(i);
            return p;
          }
        }
        return undefined;
      }
      if (!isPlain(obj)) return `${describe(obj)} (not a plain object)`;
      for (const k in obj) {
        if (!Object.hasOwn(obj, k)) continue;
        const p = problemOf((obj as Record<string, unknown>)[k], false);
        if (p !== undefined) {
          path.push(k);
          return p;
        }
      }
      return undefined;
    } finally {
      seen.delete(obj);
    }
  };
  const problem = problemOf(value, false);
  if (problem === undefined) return undefined;
  let at = where;
  for (let i = path.length - 1; i >= 0; i--) {
    const k = path[i];
    at += typeof k === 'number' ? `[${String(k)}]` : `.${k ?? ''}`;
  }
  if (problem.endsWith(' (not a plain object)')) return `${problem.slice(0, -' (not a plain object)'.length)} at ${at} (not a plain object)`;
  return `${problem} at ${at}`;
}
