/**
 * Scalar coercions shared by the schema. Each returns the value it settled on plus a `note` when the
 * input was not written in its canonical form, so the caller can turn the note into a warning: a
 * coercion is never silent.
 */

/** How much of a Mixture-of-Agents turn the privacy filter redacts (`moa.privacy_filter`). */
export type PrivacyFilter = 'off' | 'display' | 'full';

/** The outcome of {@link coercePrivacyFilter}. */
export interface PrivacyFilterCoercion {
  /** The mode the value stands for. */
  readonly mode: PrivacyFilter;
  /**
   * `null` when the value was canonical (`off`, `display`, `full`, `""`, `true`, `false`, `null`);
   * otherwise one sentence saying how it was read. Callers surface it as a warning.
   */
  readonly note: string | null;
}

/** Strings (after trimming and lower-casing) that the reference reads as "on". */
const TRUE_WORDS: ReadonlySet<string> = new Set(['true', 'yes', 'on', '1']);
/** Strings that plainly mean "off". The reference reads every unknown string as off too. */
const FALSE_WORDS: ReadonlySet<string> = new Set(['false', 'no', 'off', '0']);

/** Quote a string the way error and warning messages show it. */
export function quote(text: string): string {
  return JSON.stringify(text);
}

/**
 * Map a raw `moa.privacy_filter` scalar to a mode, exactly as the Python reference
 * (`hermes_cli.moa_config.coerce_privacy_filter`) does:
 *
 * | raw value | mode |
 * |---|---|
 * | `true` | `full` |
 * | `false`, `null`, `undefined` | `off` |
 * | string, trimmed and lower-cased: `display` / `full` | itself |
 * | string `true`, `on`, `yes`, `1` | `full` |
 * | any other string (`off`, `""`, `no`, a typo...) | `off` |
 * | number: its decimal text, read as a string (`1` → `full`, anything else → `off`) | |
 *
 * Guarantee: the mode is always the reference's; `note` is non-null for every input that is not
 * canonical, and for an unknown value it says that privacy filtering is off.
 */
export function coercePrivacyFilter(value: string | number | boolean | null | undefined): PrivacyFilterCoercion {
  if (value === true) return { mode: 'full', note: null };
  if (value === false || value === null || value === undefined) return { mode: 'off', note: null };
  const shown = typeof value === 'string' ? quote(value) : String(value);
  const word = String(value).trim().toLowerCase();
  if (word === 'display' || word === 'full') {
    return { mode: word, note: word === value ? null : `${shown} was read as "${word}"` };
  }
  if (word === 'off' || word === '') {
    return { mode: 'off', note: word === value ? null : `${shown} was read as "off"` };
  }
  if (TRUE_WORDS.has(word)) return { mode: 'full', note: `${shown} was read as "full"` };
  if (FALSE_WORDS.has(word)) return { mode: 'off', note: `${shown} was read as "off"` };
  return {
    mode: 'off',
    note: `unknown value ${shown} was read as "off", so privacy filtering is OFF (expected off, display or full)`,
  };
}

/** The outcome of {@link coerceBoolean}. */
export interface BooleanCoercion {
  readonly value: boolean;
  readonly note: string | null;
}

/**
 * Read a boolean setting. YAML booleans pass as they are. The words PyYAML (YAML 1.1) reads as
 * booleans — `yes`/`no`/`on`/`off` — arrive here as strings under YAML 1.2, so they are accepted with a
 * note, as are the strings `true`/`false`/`1`/`0` and the numbers `1`/`0`. Anything else returns
 * `undefined`: the caller reports it as invalid rather than guessing (Python's truthiness would turn
 * the string `"false"` on).
 */
export function coerceBoolean(value: unknown): BooleanCoercion | undefined {
  if (typeof value === 'boolean') return { value, note: null };
  if (typeof value === 'number') {
    if (value === 1 || value === 0) return { value: value === 1, note: `${value} was read as ${value === 1}` };
    return undefined;
  }
  if (typeof value !== 'string') return undefined;
  const word = value.trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return { value: true, note: `the string ${quote(value)} was read as true` };
  if (FALSE_WORDS.has(word)) return { value: false, note: `the string ${quote(value)} was read as false` };
  return undefined;
}
