/**
 * JSON text in the exact layout Python's `json.dumps(value, ensure_ascii=False)` produces: `", "` between
 * items and `": "` after keys, non-ASCII characters kept as they are. ShareGPT trajectories written by the
 * Python agent embed tool calls, tool responses and tool schemas in this layout, so a dataset mixing both
 * implementations stays byte-consistent.
 */

/** A value after a JSON round trip: what JSON.stringify would keep, and nothing else. */
type Plain = null | boolean | number | string | Plain[] | { [key: string]: Plain };

function render(value: Plain): string {
  if (value === null) return 'null';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    // JSON.stringify escapes exactly what Python escapes with ensure_ascii=False: `"`, `\`, and control
    // characters below U+0020 (as \n, \t, … or \u00XX, lower-case hex).
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(render).join(', ')}]`;
  const fields = Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${render(item)}`);
  return `{${fields.join(', ')}}`;
}

/**
 * Serialises `value` like Python's `json.dumps(value, ensure_ascii=False)`. The value is first normalised
 * by a JSON round trip (so `toJSON`, `undefined` members and non-finite numbers behave as in
 * JSON.stringify); a value JSON cannot represent (a cycle, a BigInt) throws a TypeError.
 */
export function pythonJson(value: unknown): string {
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) return 'null';
  return render(JSON.parse(text) as Plain);
}
