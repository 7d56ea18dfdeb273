import { FsPolicyError } from '@hermes/fs-policy';
import pc from 'picocolors';

/** Exit codes of every command (documented in the README and `--help`). */
export const EXIT = {
  /** Success: the matrix matched, the home is clean, the command did what was asked. */
  ok: 0,
  /** The command ran but found a problem: a matrix mismatch, doctor findings, a failed save. */
  findings: 1,
  /** The command could not run: bad arguments, an unreadable home, an unexpected error. */
  error: 2,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports as one line plus a hint, with a chosen exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly hint: string | undefined;
  readonly exitCode: ExitCode;

  constructor(message: string, options: { hint?: string; exitCode?: ExitCode; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? EXIT.error;
  }
}

/** Colour only on a TTY and never when NO_COLOR is set to a non-empty value (https://no-color.org). */
export function colorEnabled(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  const noColor = env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return false;
  // A pipe's isTTY is undefined (despite the type), which picocolors would read as "decide yourself" and
  // then colour because CI or FORCE_COLOR is set.
  const tty: unknown = stream.isTTY;
  return tty === true;
}

export type Colors = ReturnType<typeof pc.createColors>;

export function colorsFor(stream: NodeJS.WriteStream): Colors {
  return pc.createColors(colorEnabled(stream));
}

/** Writes one JSON document (pretty, newline-terminated) to stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function println(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** The error as one line, and the hint to show under it. */
export function describeError(err: unknown): { line: string; hint: string | undefined } {
  if (err instanceof CliError) return { line: err.message, hint: err.hint };
  if (err instanceof FsPolicyError) {
    // toLine() carries the path, the step, the uid/gid and the fix on one line.
    return { line: err.toLine(), hint: undefined };
  }
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    const first = err.message.split('\n')[0] ?? err.message;
    return {
      line: code !== undefined && !first.includes(code) ? `${first} (${code})` : first,
      hint: 'run again with --debug for the stack trace',
    };
  }
  return { line: String(err), hint: 'run again with --debug for details' };
}

/** Prints an error to stderr: one line and a hint; the stack only with --debug. */
export function reportError(err: unknown, debug: boolean): ExitCode {
  const c = colorsFor(process.stderr);
  const { line, hint } = describeError(err);
  process.stderr.write(`${c.red('hermes-fs: error:')} ${line}\n`);
  if (hint !== undefined) process.stderr.write(`${c.dim('hint:')} ${hint}\n`);
  if (debug && err instanceof Error && err.stack !== undefined) {
    process.stderr.write(`${err.stack}\n`);
    let cause: unknown = err.cause;
    while (cause instanceof Error) {
      process.stderr.write(`caused by: ${cause.stack ?? cause.message}\n`);
      cause = cause.cause;
    }
  }
  return err instanceof CliError ? err.exitCode : EXIT.error;
}

/** A table style with no colours of its own: colour is applied by us, only when enabled. */
export const PLAIN_TABLE_STYLE = { head: [] as string[], border: [] as string[] };

/** Box characters without a separator line between body rows. */
export const COMPACT_CHARS = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };

/** Human-readable size. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i] ?? 'TiB'}`;
}

/** Human-readable age, from milliseconds. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m}m`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h}h`;
  return `${Math.round(h / 24)}d`;
}

/** `1 file`, `2 files`. */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}
