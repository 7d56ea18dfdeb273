import { FsPolicyError } from '@hermes/fs-policy';
import pc from 'picocolors';
import { termSafe } from './term.js';

/** Exit codes of every command (documented in the README and `--help`). */
export const EXIT = {
  /** Success: the matrix matched, the home is clean, the command did what was asked. */
  ok: 0,
  /** The command ran and found problems or failed part of its work: a mismatch, findings, a failed save, a `.bad` file. */
  findings: 1,
  /** The command could not run: bad usage, a missing or unusable home, a missing `state.db`, an unexpected error. */
  error: 2,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports as one line plus a hint (and, with `--json`, an error document), with an exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  /** A stable identifier: an errno (`ENOENT`, `EACCES`, …) or one of ours (`EUSAGE`, `ENODB`, `ENOTFOUND`, …). */
  readonly code: string;
  /** The path the error is about, when there is one. */
  readonly path: string | null;
  readonly hint: string | undefined;
  readonly exitCode: ExitCode;

  constructor(message: string, options: { code?: string; path?: string | null; hint?: string; exitCode?: ExitCode; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = options.code ?? 'EERROR';
    this.path = options.path ?? null;
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? EXIT.error;
  }
}

/** `--color` (true) / `--no-color` (false) / neither (undefined), set once per run by the program. */
let colorFlag: boolean | undefined;

export function setColorFlag(flag: boolean | undefined): void {
  colorFlag = flag;
}

/**
 * Whether to colour `stream`: `--color`/`--no-color` decide; else `FORCE_COLOR` (non-empty; `0`/`false` turn
 * colour off); else `NO_COLOR` (non-empty) turns it off; else `TERM=dumb` turns it off; else only on a terminal.
 * FORCE_COLOR before NO_COLOR is Node's own order.
 */
export function colorEnabled(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env, flag: boolean | undefined = colorFlag): boolean {
  if (flag !== undefined) return flag;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '') return !(force === '0' || force.toLowerCase() === 'false');
  const noColor = env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return false;
  if (env.TERM === 'dumb') return false;
  // A pipe's isTTY is undefined (despite the type).
  const tty: unknown = stream.isTTY;
  return tty === true;
}

export type Colors = ReturnType<typeof pc.createColors>;

export function colorsFor(stream: NodeJS.WriteStream): Colors {
  return pc.createColors(colorEnabled(stream));
}

/** How stdout failed: its reader went away (`epipe`), or a real write error (`other`); null while it works. */
let stdoutFailure: 'epipe' | 'other' | null = null;
let guardsInstalled = false;

/**
 * A closed stdout (`hermes-fs pending list | head -1`) ends the output quietly: later writes are dropped and
 * the process exits 0 (see {@link stdoutClosed}); a closed stderr is ignored.
 */
export function installStreamGuards(): void {
  if (guardsInstalled) return;
  guardsInstalled = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (stdoutFailure !== null) return;
    stdoutFailure = err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED' ? 'epipe' : 'other';
    if (stdoutFailure === 'other') {
      // Not a reader that went away (a full disk under `> file`, …): say so where it can still be seen.
      try {
        process.stderr.write(`hermes-fs: error: cannot write to stdout: ${err.message}\n`);
      } catch {
        // stderr is gone as well
      }
    }
  });
  process.stderr.on('error', () => {
    // stderr closed: nothing left to tell
  });
}

/** True once stdout's reader went away: stop producing output. */
export function stdoutClosed(): boolean {
  return stdoutFailure !== null || process.stdout.destroyed;
}

/**
 * The exit code a run ends with once stdout failed: 0 when its reader went away (EPIPE: the operator's
 * `| head` got what it wanted), 2 for a real write error; undefined while stdout works.
 */
export function stdoutExitCode(): ExitCode | undefined {
  if (stdoutFailure === 'epipe') return EXIT.ok;
  if (stdoutFailure === 'other') return EXIT.error;
  return process.stdout.destroyed ? EXIT.ok : undefined;
}

export function write(text: string): void {
  if (!stdoutClosed()) process.stdout.write(text);
}

export function println(line = ''): void {
  write(`${line}\n`);
}

/** Writes one JSON document (pretty, newline-terminated) to stdout. */
export function printJson(value: unknown): void {
  write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Output collected into chunks of ~64 KiB before it is written, with backpressure: a long streamed document
 * (a 100,000-entry listing) costs few writes, and when stdout is a pipe whose reader is slower than we are,
 * `mustWait` turns true and `drain()` waits for it — memory stays bounded by the chunk size instead of
 * queueing the whole document.
 */
export class ChunkedWriter {
  #buf = '';
  #blocked = false;

  write(text: string): void {
    this.#buf += text;
    if (this.#buf.length >= 65_536) this.flush();
  }

  flush(): void {
    if (this.#buf === '') return;
    const chunk = this.#buf;
    this.#buf = '';
    if (stdoutClosed()) return;
    if (!process.stdout.write(chunk)) this.#blocked = true;
  }

  /** True when stdout's buffer is full: await {@link drain} before producing more. */
  get mustWait(): boolean {
    return this.#blocked;
  }

  /** Resolves once stdout has taken what was written (or failed, or closed). */
  async drain(): Promise<void> {
    if (!this.#blocked) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        process.stdout.off('drain', done);
        process.stdout.off('error', done);
        process.stdout.off('close', done);
        resolve();
      };
      process.stdout.on('drain', done);
      process.stdout.on('error', done);
      process.stdout.on('close', done);
    });
    this.#blocked = false;
  }

  /** Writes what is buffered and waits until stdout has taken it. */
  async end(): Promise<void> {
    this.flush();
    await this.drain();
  }

  /** True once stdout's reader went away. */
  get closed(): boolean {
    return stdoutClosed();
  }
}

/** Writes lines through a {@link ChunkedWriter}, waiting for a slow reader: for outputs of any length. */
export async function writeLines(lines: Iterable<string>): Promise<void> {
  const w = new ChunkedWriter();
  for (const line of lines) {
    w.write(`${line}\n`);
    if (w.closed) return;
    if (w.mustWait) await w.drain();
  }
  await w.end();
}

export function stderrLine(line: string): void {
  try {
    process.stderr.write(`${line}\n`);
  } catch {
    // stderr closed
  }
}

/** The error as one line, its code and path, and the hint to show under it. */
export function describeError(err: unknown): { line: string; code: string; path: string | null; hint: string | undefined } {
  if (err instanceof CliError) return { line: err.message, code: err.code, path: err.path, hint: err.hint };
  if (err instanceof FsPolicyError) {
    // toLine() carries the path, the step, the uid/gid and the fix on one line.
    return { line: err.toLine(), code: err.code, path: err.path, hint: undefined };
  }
  if (err instanceof Error) {
    const e = err as NodeJS.ErrnoException;
    const first = err.message.split('\n')[0] ?? err.message;
    // A library error that carries its own fix (@hermes/session-db's SessionDbError, …) keeps it.
    const own = (err as { hint?: unknown }).hint;
    return {
      line: e.code !== undefined && !first.includes(e.code) ? `${first} (${e.code})` : first,
      code: e.code ?? 'EINTERNAL',
      path: e.path ?? null,
      hint: typeof own === 'string' && own !== '' ? own : 'run again with --debug for the stack trace',
    };
  }
  return { line: String(err), code: 'EINTERNAL', path: null, hint: 'run again with --debug for details' };
}

/** The `--json` error document: what every command prints on stdout when it fails. */
export interface ErrorDocument {
  readonly schemaVersion: 1;
  readonly command: string;
  readonly ok: false;
  /** A failure's code: 1 or 2 (schema/error.schema.json). */
  readonly exitCode: typeof EXIT.findings | typeof EXIT.error;
  readonly error: { readonly code: string; readonly message: string; readonly path: string | null; readonly hint: string | null };
}

/** The error document of a failure; an exit code of 0 (no failure) is reported as 2, as the schema requires. */
export function errorDocument(command: string, err: unknown, exitCode: ExitCode): ErrorDocument {
  const d = describeError(err);
  const code = exitCode === EXIT.ok ? EXIT.error : exitCode;
  return { schemaVersion: 1, command, ok: false, exitCode: code, error: { code: d.code, message: d.line, path: d.path, hint: d.hint ?? null } };
}

export function exitCodeOf(err: unknown): ExitCode {
  return err instanceof CliError ? err.exitCode : EXIT.error;
}

/**
 * Reports a failure: one line and a hint on stderr (terminal-safe; the stack only with --debug) and, with
 * --json, the error document on stdout. Returns the exit code.
 */
export function reportError(err: unknown, options: { debug: boolean; json: boolean; command: string }): ExitCode {
  const code = exitCodeOf(err);
  const c = colorsFor(process.stderr);
  const { line, hint } = describeError(err);
  stderrLine(`${c.red('hermes-fs: error:')} ${termSafe(line)}`);
  if (hint !== undefined) stderrLine(`${c.dim('hint:')} ${termSafe(hint)}`);
  if (options.debug && err instanceof Error && err.stack !== undefined) {
    stderrLine(err.stack);
    let cause: unknown = err.cause;
    while (cause instanceof Error) {
      stderrLine(`caused by: ${cause.stack ?? cause.message}`);
      cause = cause.cause;
    }
  }
  if (options.json) printJson(errorDocument(options.command, err, code));
  return code;
}

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

/** A count with thousands separators: `100,000`. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** `1 file`, `2 files`, `100,000 files`. */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${count(n)} ${n === 1 ? word : many}`;
}
