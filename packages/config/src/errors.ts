import { quote } from './coerce.js';

/**
 * What went wrong:
 * - `read`: the file exists (or could not be checked) but could not be read, or is not UTF-8;
 * - `syntax`: the text is not valid YAML (or holds more than one document);
 * - `not-mapping`: the document's top level is a list or a scalar instead of a mapping;
 * - `invalid-value`: a validated key holds a value of the wrong type or out of range.
 */
export type ConfigIssueKind = 'read' | 'syntax' | 'not-mapping' | 'invalid-value';

/** One problem found in a config file. */
export interface ConfigIssue {
  readonly kind: ConfigIssueKind;
  /** Dotted YAML key path (`moa.save_traces`); `''` means the file or document as a whole. */
  readonly keyPath: string;
  /** The offending value as parsed (`undefined` for `read` and `syntax` issues). */
  readonly value: unknown;
  /** What was expected, in words (`a boolean`, `a positive integer`, `valid YAML`...). */
  readonly expected: string;
  /** 1-based line of the offending node or syntax error, when known. */
  readonly line?: number;
  /** 1-based column, when known. */
  readonly column?: number;
  /** One line describing the issue, without the file name: `moa.save_traces: expected a boolean, got "maybe" (line 2, column 16)`. */
  readonly message: string;
}

/** Where in the file something is. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

/**
 * Raised for every config file that cannot be used. It carries all issues found (not only the first);
 * the top-level `keyPath`, `value`, `expected`, `line` and `column` repeat the first issue's.
 *
 * Message: `<file>: <issue>` for one issue, or `<file>: N problems:` followed by one indented line per
 * issue.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** The file the issues belong to (the path read, or the label given to `parseConfig`). */
  readonly file: string;
  /** Every issue, sorted by line, then column (issues without a position last). */
  readonly issues: readonly ConfigIssue[];
  readonly kind: ConfigIssueKind;
  readonly keyPath: string;
  readonly value: unknown;
  readonly expected: string;
  /** Present only when known (never an own property holding `undefined`). */
  declare readonly line?: number;
  declare readonly column?: number;

  constructor(file: string, issues: readonly [ConfigIssue, ...ConfigIssue[]], options?: { cause?: unknown }) {
    const first = issues[0];
    const message =
      issues.length === 1
        ? `${file}: ${first.message}`
        : `${file}: ${issues.length} problems:\n${issues.map((issue) => `  ${issue.message}`).join('\n')}`;
    super(message, options);
    this.file = file;
    this.issues = issues;
    this.kind = first.kind;
    this.keyPath = first.keyPath;
    this.value = first.value;
    this.expected = first.expected;
    if (first.line !== undefined) this.line = first.line;
    if (first.column !== undefined) this.column = first.column;
  }
}

/** ` (line 2, column 16)`, or `''` when the position is unknown. */
export function positionSuffix(position: Position | undefined): string {
  return position === undefined ? '' : ` (line ${position.line}, column ${position.column})`;
}

const MAX_SHOWN = 60;

function truncate(text: string): string {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 3)}...` : text;
}

/** Render a parsed YAML value for a message: strings quoted, numbers in YAML spelling, collections named. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return truncate(quote(value));
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return '.nan';
    if (value === Infinity) return '.inf';
    if (value === -Infinity) return '-.inf';
    return String(value);
  }
  if (value === null) return 'null';
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return `a list ${truncate(JSON.stringify(value))}`;
  if (typeof value === 'object') return `a mapping ${truncate(JSON.stringify(value))}`;
  return typeof value;
}

/** Build the issue for a key whose value failed validation. */
export function invalidValueIssue(
  keyPath: string,
  value: unknown,
  expected: string,
  position: Position | undefined,
): ConfigIssue {
  return withPosition(
    {
      kind: 'invalid-value',
      keyPath,
      value,
      expected,
      message: `${keyPath}: expected ${expected}, got ${describeValue(value)}${positionSuffix(position)}`,
    },
    position,
  );
}

/** Attach `line`/`column` to an issue when the position is known (never as explicit `undefined`). */
export function withPosition(issue: ConfigIssue, position: Position | undefined): ConfigIssue {
  return position === undefined ? issue : { ...issue, line: position.line, column: position.column };
}
