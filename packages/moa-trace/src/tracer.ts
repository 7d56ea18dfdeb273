import * as path from 'node:path';
import {
  appendJsonLine,
  appendJsonLineSync,
  expandTilde,
  FsPolicyError,
  getLogger,
  loadEnvironment,
  type AppendOptions,
  type AppendResult,
  type EnvSource,
  type FsPolicyLogger,
  type HermesEnvironment,
} from '@hermes/fs-policy';
import { resolveTraceDir } from './dir.js';
import { MoaTraceConfigError } from './errors.js';
import {
  buildTraceRecord,
  liveAggregatorInput,
  PRIVACY_FILTER_MODES,
  uiEventFor,
  type MoaMessage,
  type MoaTurn,
  type MoaUiEvent,
  type PrivacyFilterMode,
} from './record.js';
import { traceFileName } from './session.js';

/** The three `moa:` settings, as plain typed options (what `@hermes/config` loads as `config.moa`). */
export interface MoaTraceSettings {
  /** `moa.save_traces`: write one JSONL line per turn. Default false. */
  readonly saveTraces: boolean;
  /** `moa.trace_dir`: `~`, `$VAR` and `${VAR}` expanded; relative to the home; null → `<home>/moa-traces`. */
  readonly traceDir: string | null;
  /** `moa.privacy_filter`. Default `off`. */
  readonly privacyFilter: PrivacyFilterMode;
}

export interface MoaTracerOptions {
  /** The Hermes home (`~` expanded, made absolute). */
  readonly home: string;
  readonly saveTraces?: boolean | undefined;
  readonly traceDir?: string | null | undefined;
  readonly privacyFilter?: PrivacyFilterMode | undefined;
  /** The fs-policy environment for `home`; loaded with `loadEnvironment` on the first write when omitted. */
  readonly env?: HermesEnvironment | undefined;
  /** Variables for `~`/`$VAR` expansion and, when `env` is omitted, for `loadEnvironment` (default process.env). */
  readonly vars?: EnvSource | undefined;
  /** Receives one error line per failed write (default: the fs-policy logger, stderr for errors). */
  readonly logger?: FsPolicyLogger | undefined;
  /** fsync after each line (default false). */
  readonly fsync?: boolean | undefined;
  /** Epoch milliseconds for `ts` (default `Date.now`). */
  readonly clock?: (() => number) | undefined;
}

/** What `record()` did. It never throws: a failure is returned as `error` and logged. */
export interface MoaRecordResult {
  /** True when the line reached the file. */
  readonly written: boolean;
  /** The trace file (set whenever tracing is enabled, also on failure). */
  readonly path?: string;
  /** The failure: an `FsPolicyError` (code, errno, path, step, hint) for I/O; the original error otherwise. */
  readonly error?: Error;
  /** True when this line created the file (then it is `0600`). */
  readonly created?: boolean;
  /** The file's permission bits after the append. */
  readonly mode?: number;
  readonly bytes?: number;
  /** The UI copy of the reference outputs: redacted under `display` and `full`. */
  readonly uiEvent: MoaUiEvent;
  /** The aggregator input as the live request should carry it: the caller's array under `off`/`display`, redacted under `full`. */
  readonly aggregatorInputMessages: readonly MoaMessage[];
}

export interface MoaTracerStats {
  readonly written: number;
  readonly failed: number;
  readonly lastError: Error | null;
}

export interface MoaTracer {
  /** True when `saveTraces` is on. */
  readonly enabled: boolean;
  readonly privacyFilter: PrivacyFilterMode;
  /** The absolute trace directory, or null when tracing is disabled. */
  readonly traceDir: string | null;
  /** The trace file of a session, or null when tracing is disabled. */
  pathFor(sessionId: string | null | undefined): string | null;
  /** The UI copy of a turn's reference outputs (redacted under `display` and `full`). */
  uiEvent(turn: Pick<MoaTurn, 'preset' | 'references'>): MoaUiEvent;
  /** The aggregator input to send: untouched under `off`/`display`, a redacted copy under `full`. */
  liveAggregatorInput<T extends readonly MoaMessage[]>(messages: T): T;
  /** Appends the turn's record (a no-op with `written: false` when disabled). Never throws. */
  record(turn: MoaTurn): Promise<MoaRecordResult>;
  /** Synchronous form of {@link MoaTracer.record}. */
  recordSync(turn: MoaTurn): MoaRecordResult;
  /** Lines written and failed by this tracer, and the last failure (for a status command). */
  stats(): MoaTracerStats;
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function validate(options: MoaTracerOptions): void {
  if (typeof options.home !== 'string' || options.home.trim() === '') {
    throw new MoaTraceConfigError('EINVALID_OPTION', 'moa-trace: `home` must be a non-empty path');
  }
  const filter: unknown = options.privacyFilter ?? 'off';
  if (!PRIVACY_FILTER_MODES.includes(filter as PrivacyFilterMode)) {
    throw new MoaTraceConfigError(
      'EINVALID_OPTION',
      `moa-trace: privacyFilter must be one of off, display, full (got ${JSON.stringify(filter)})`,
    );
  }
  const save: unknown = options.saveTraces ?? false;
  if (typeof save !== 'boolean') {
    throw new MoaTraceConfigError('EINVALID_OPTION', `moa-trace: saveTraces must be a boolean (got ${JSON.stringify(save)})`);
  }
}

/**
 * Creates a Mixture-of-Agents tracer. Tracing is off unless `saveTraces` is true; the directory is resolved
 * once, here (a bad `traceDir` throws `MoaTraceConfigError` now, not on every turn). Every directory level
 * the tracer creates is secured as kind `moa-traces` by `@hermes/fs-policy` (0700 unmanaged, whatever
 * HERMES_HOME_MODE says; managed: the setgid parent and the service umask decide); levels that existed are
 * left as they are. Trace files are created `0600`; an existing file keeps its mode.
 */
export function createMoaTracer(options: MoaTracerOptions): MoaTracer {
  validate(options);
  const vars = options.vars ?? process.env;
  const home = path.resolve(expandTilde(options.home, vars));
  const mode: PrivacyFilterMode = options.privacyFilter ?? 'off';
  const enabled = options.saveTraces === true;
  const traceDir = enabled ? resolveTraceDir(options.traceDir, home, vars) : null;
  const logger = options.logger ?? getLogger();
  const clock = options.clock ?? Date.now;
  // Links inside the home must stay inside it; an override outside the home is the operator's choice, so
  // only links at or below the trace directory itself are checked there.
  const root = traceDir !== null && !isInside(traceDir, home) ? traceDir : home;
  let env = options.env;
  let written = 0;
  let failed = 0;
  let lastError: Error | null = null;

  // The append options are the same for every turn: built (and the environment checked) once, on the first
  // write. Only invariants of this tracer are kept; the directory chain is still checked by every append.
  let appendOptions: AppendOptions | undefined;
  const policy = (): { append: AppendOptions } => {
    if (appendOptions !== undefined) return { append: appendOptions };
    env ??= loadEnvironment(options.vars === undefined ? { home } : { home, env: options.vars });
    if (path.resolve(env.home) !== home) {
      throw new TypeError(`moa-trace: options.env was loaded for ${env.home}, not for the home ${home}`);
    }
    appendOptions = Object.freeze({ kind: 'moa-traces', env, root, fsync: options.fsync === true });
    return { append: appendOptions };
  };

  // A session writes many turns: its file name (a pure function of the id) is derived once per session.
  let lastId: string | null | undefined;
  let lastPath: string | null = null;
  const pathFor = (sessionId: string | null | undefined): string | null => {
    if (traceDir === null) return null;
    if (lastPath === null || sessionId !== lastId) {
      lastPath = path.join(traceDir, traceFileName(sessionId));
      lastId = sessionId;
    }
    return lastPath;
  };

  const succeed = (r: AppendResult, extra: Pick<MoaRecordResult, 'uiEvent' | 'aggregatorInputMessages'>): MoaRecordResult => {
    written += 1;
    return { written: true, path: r.path, created: r.created, mode: r.mode, bytes: r.bytes, ...extra };
  };

  const fail = (
    err: unknown,
    file: string | null,
    turn: MoaTurn,
    extra: Pick<MoaRecordResult, 'uiEvent' | 'aggregatorInputMessages'>,
  ): MoaRecordResult => {
    const error = toError(err);
    failed += 1;
    lastError = error;
    const session = JSON.stringify(turn.sessionId ?? null);
    if (error instanceof FsPolicyError) {
      logger.error(`MoA trace for session ${session} not written: ${error.toLine()}`, {
        path: error.path,
        code: error.code,
        errno: error.errno,
        step: error.step,
        uid: error.uid,
        hint: error.hint,
      });
    } else {
      logger.error(`MoA trace for session ${session} not written to ${file ?? '(no path)'}: ${error.message}`, {
        path: file,
        code: 'EINVALID_TURN',
        hint: 'the turn could not be turned into a trace record; check the values passed to record()',
      });
    }
    return file === null ? { written: false, error, ...extra } : { written: false, path: file, error, ...extra };
  };

  type Prepared =
    | {
        ok: true;
        file: string;
        record: unknown;
        append: AppendOptions;
        extra: Pick<MoaRecordResult, 'uiEvent' | 'aggregatorInputMessages'>;
      }
    | { ok: false; result: MoaRecordResult };

  const prepare = (turn: MoaTurn): Prepared => {
    let extra: Pick<MoaRecordResult, 'uiEvent' | 'aggregatorInputMessages'> = {
      uiEvent: { preset: '', references: [] },
      aggregatorInputMessages: [],
    };
    let file: string | null = null;
    try {
      extra = { uiEvent: uiEventFor(mode, turn), aggregatorInputMessages: liveAggregatorInput(mode, turn.aggregator.inputMessages) };
      file = pathFor(turn.sessionId);
      if (file === null) return { ok: false, result: { written: false, ...extra } };
      return { ok: true, file, record: buildTraceRecord(mode, turn, clock()), ...policy(), extra };
    } catch (err) {
      return { ok: false, result: fail(err, file, turn, extra) };
    }
  };

  // fs-policy checks the directory chain on every append (a trace directory swapped for a link leading
  // out of the root is refused) and secures every level it creates.
  return {
    enabled,
    privacyFilter: mode,
    traceDir,
    pathFor,
    uiEvent: (turn) => uiEventFor(mode, turn),
    liveAggregatorInput: (messages) => liveAggregatorInput(mode, messages),
    async record(turn) {
      const p = prepare(turn);
      if (!p.ok) return p.result;
      try {
        return succeed(await appendJsonLine(p.file, p.record, p.append), p.extra);
      } catch (err) {
        return fail(err, p.file, turn, p.extra);
      }
    },
    recordSync(turn) {
      const p = prepare(turn);
      if (!p.ok) return p.result;
      try {
        return succeed(appendJsonLineSync(p.file, p.record, p.append), p.extra);
      } catch (err) {
        return fail(err, p.file, turn, p.extra);
      }
    },
    stats: () => ({ written, failed, lastError }),
  };
}
