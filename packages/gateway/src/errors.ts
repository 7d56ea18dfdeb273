/**
 * A call this package cannot act on as asked: an option of the wrong type or range (`concurrency: NaN`,
 * `budgetMs: -1`), or an input that is not what the function takes (`flushPending(42)`). Functions that
 * never throw (the flushes, recovery) report it instead, as a `warnings`/`failed`/`errors` entry with this
 * code; `installShutdownHook` throws it.
 */
export class GatewayInputError extends Error {
  override readonly name = 'GatewayInputError';
  readonly code: 'EINVALID_OPTION' | 'EINVALID_INPUT';
  /** The option or argument at fault (`concurrency`, `pending`, …). */
  readonly field: string;

  constructor(code: 'EINVALID_OPTION' | 'EINVALID_INPUT', field: string, message: string) {
    super(message);
    this.code = code;
    this.field = field;
  }
}

/** A short description of a value for an error message: `number 42`, `string "abc"`, `an array`, `NaN`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'number':
      return Number.isFinite(value) ? `number ${String(value)}` : String(value);
    case 'string':
      return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    case 'object': {
      const ctor = (value as { constructor?: { name?: unknown } }).constructor;
      return typeof ctor?.name === 'string' && ctor.name !== 'Object' ? `a ${ctor.name}` : 'an object';
    }
    default:
      return typeof value;
  }
}

/**
 * A positive integer option (`concurrency`, `batchSize`): the value when it is one, else undefined with the
 * reason. `Infinity` is accepted where `allowInfinity` says so.
 */
export function positiveIntegerProblem(name: string, value: unknown, allowInfinity = false): string | undefined {
  if (typeof value === 'number' && ((Number.isInteger(value) && value >= 1) || (allowInfinity && value === Number.POSITIVE_INFINITY))) {
    return undefined;
  }
  return `${name} must be a positive integer, got ${describeValue(value)}`;
}
