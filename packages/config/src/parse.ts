import { isNode, LineCounter, parseDocument, stringify, type Document } from 'yaml';
import {
  ConfigError,
  describeValue,
  invalidValueIssue,
  positionSuffix,
  withPosition,
  type ConfigIssue,
  type Position,
} from './errors.js';
import { buildSchema, defaultConfig, type HermesConfig } from './schema.js';

/** Where a {@link LoadedConfig} came from: a file (possibly empty), or defaults because there was none. */
export type ConfigSource = 'file' | 'default';

/** The result of loading or parsing config.yaml. */
export interface LoadedConfig {
  /** The validated keys, typed and defaulted. */
  readonly config: HermesConfig;
  /**
   * The whole document as plain data, every key kept as written, unknown ones included; `{}` when the
   * file is missing or empty. Serialize it with {@link toYaml}.
   */
  readonly raw: Record<string, unknown>;
  /** One line per non-fatal event (a coerced value, a YAML warning), each naming the file and key. */
  readonly warnings: readonly string[];
  readonly source: ConfigSource;
  /** The file read (or that would have been read, when `source` is `'default'`). */
  readonly file: string;
}

/** Options for the YAML parser: YAML 1.2 core schema plus `<<` merge keys, which PyYAML also honours. */
const PARSE_OPTIONS = { merge: true, prettyErrors: false } as const;

/** The result for a file that does not exist. */
export function defaultLoaded(file: string): LoadedConfig {
  return { config: defaultConfig(), raw: {}, warnings: [], source: 'default', file };
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function positionOf(lines: LineCounter, offset: number | undefined): Position | undefined {
  if (offset === undefined) return undefined;
  const { line, col } = lines.linePos(offset);
  return { line, column: col };
}

/** Position of the node at a key path (`[]` = the document's top-level node), when the path is in the source. */
function nodePosition(doc: Document, lines: LineCounter, path: readonly string[]): Position | undefined {
  const node: unknown = path.length === 0 ? doc.contents : doc.getIn(path, true);
  return isNode(node) && node.range ? positionOf(lines, node.range[0]) : undefined;
}

/** Narrow a list known to be non-empty (zod reports at least one issue on failure). */
function atLeastOne(issues: readonly ConfigIssue[]): [ConfigIssue, ...ConfigIssue[]] {
  const [first, ...rest] = issues;
  if (first === undefined) throw new Error('@hermes/config: validation failed without an issue');
  return [first, ...rest];
}

/**
 * The issues sorted by line, then column, as the file reads (the schema reports them in its own key order).
 * Issues without a position (a value inherited through a `<<` merge key) keep their relative order, last.
 */
function inFileOrder(issues: readonly ConfigIssue[]): ConfigIssue[] {
  const compare = (x: number | undefined, y: number | undefined): number =>
    x === y ? 0 : x === undefined ? 1 : y === undefined ? -1 : x - y;
  return [...issues].sort((a, b) => compare(a.line, b.line) || compare(a.column, b.column));
}

function syntaxIssue(message: string, position: Position | undefined): ConfigIssue {
  return withPosition(
    {
      kind: 'syntax',
      keyPath: '',
      value: undefined,
      expected: 'valid YAML',
      message: `invalid YAML: ${message}${positionSuffix(position)}`,
    },
    position,
  );
}

/**
 * Parse the text of a config.yaml and validate the keys this package knows.
 *
 * Guarantees:
 * - empty text, a comment-only document or a bare `null` yields the defaults (`raw` is `{}`);
 * - a leading byte-order mark is ignored;
 * - text that is not valid YAML (including several documents or duplicate keys) throws a
 *   {@link ConfigError} of kind `syntax` naming `file`, the line and the column;
 * - a top level that is a list or a scalar throws a `ConfigError` of kind `not-mapping`;
 * - every invalid value of a validated key is reported in one `ConfigError` of kind `invalid-value`
 *   (one issue per key, with its YAML key path, the value, the expectation and its line);
 * - every coercion is listed in `warnings`, never applied silently;
 * - `raw` holds the whole document, unknown keys included, and is never modified.
 *
 * @param text the file's content
 * @param file the name used in messages and in `LoadedConfig.file` (default `config.yaml`)
 */
export function parseConfig(text: string, file = 'config.yaml'): LoadedConfig {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const lines = new LineCounter();
  const doc = parseDocument(source, { ...PARSE_OPTIONS, lineCounter: lines });
  if (doc.errors.length > 0) {
    const issues = doc.errors.map((error) => syntaxIssue(error.message, positionOf(lines, error.pos[0])));
    throw new ConfigError(file, atLeastOne(inFileOrder(issues)));
  }

  let data: unknown;
  try {
    data = doc.toJS();
  } catch (error) {
    // toJS refuses documents whose aliases expand without bound ("billion laughs").
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(file, [syntaxIssue(reason, undefined)], { cause: error });
  }

  const warnings = doc.warnings.map(
    (warning) => `${file}: YAML: ${warning.message}${positionSuffix(positionOf(lines, warning.pos[0]))}`,
  );

  if (data === null || data === undefined) {
    return { config: defaultConfig(), raw: {}, warnings, source: 'file', file };
  }
  if (!isPlainRecord(data)) {
    const position = nodePosition(doc, lines, []);
    throw new ConfigError(file, [
      withPosition(
        {
          kind: 'not-mapping',
          keyPath: '',
          value: data,
          expected: 'a mapping at the top level',
          message: `the top level must be a mapping, got ${describeValue(data)}${positionSuffix(position)}`,
        },
        position,
      ),
    ]);
  }

  const notes: { path: readonly string[]; note: string }[] = [];
  const result = buildSchema((path, note) => notes.push({ path, note })).safeParse(data);
  if (!result.success) {
    const issues = result.error.issues.map((issue) => {
      const path = issue.path.map(String);
      return invalidValueIssue(path.join('.'), valueAt(data, path), issue.message, nodePosition(doc, lines, path));
    });
    throw new ConfigError(file, atLeastOne(inFileOrder(issues)));
  }
  for (const { path, note } of notes) {
    warnings.push(`${file}: ${path.join('.')}: ${note}${positionSuffix(nodePosition(doc, lines, path))}`);
  }
  return { config: result.data, raw: data, warnings, source: 'file', file };
}

/** The value at a key path of plain data (own properties only), or `undefined`. */
function valueAt(data: unknown, path: readonly string[]): unknown {
  let current: unknown = data;
  for (const key of path) {
    if (!isPlainRecord(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

/**
 * Serialize a document's plain data (normally `LoadedConfig.raw`, possibly edited) back to YAML text.
 *
 * Guarantee: `parseConfig(toYaml(raw)).raw` deep-equals `raw` for JSON-like data (mappings, lists,
 * strings, numbers including `.inf`/`.nan`, booleans, null), unknown keys included. Comments, anchors
 * and key styling of the original file are not kept. Writing the text to disk is the caller's job
 * (through `@hermes/fs-policy`).
 */
export function toYaml(raw: Readonly<Record<string, unknown>>): string {
  return stringify(raw, { lineWidth: 0 });
}
