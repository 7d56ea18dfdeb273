import { z } from 'zod';
import { coerceBoolean, coercePrivacyFilter, type PrivacyFilter } from './coerce.js';

/** Mixture-of-Agents trace settings (`moa:` in config.yaml). */
export interface MoaConfig {
  /** `moa.save_traces`: write one JSONL line per MoA turn. Default `false`. */
  readonly saveTraces: boolean;
  /**
   * `moa.trace_dir`: where traces go, exactly as written (no `~`/`$VAR` expansion here; the moa-trace
   * package expands). `null` means the default, `<home>/moa-traces`.
   */
  readonly traceDir: string | null;
  /** `moa.privacy_filter`: which trace and UI surfaces are redacted. Default `'off'`. */
  readonly privacyFilter: PrivacyFilter;
}

/** Agent settings (`agent:`). */
export interface AgentConfig {
  /**
   * `agent.trajectory_allow_git_cwd`: when `true`, a relative trajectory file inside a git work tree is
   * written where it points; when `false` (default) it is redirected to `<home>/trajectories/`.
   */
  readonly trajectoryAllowGitCwd: boolean;
}

/** Limits of the shutdown spool, `<home>/pending_messages/` (`gateway.pending:`). */
export interface PendingSpoolConfig {
  /** `gateway.pending.max_files`: most payload files the spool may hold. Default 10000. */
  readonly maxFiles: number;
  /** `gateway.pending.max_bytes`: most bytes the spool's payloads may take. Default 268435456 (256 MiB). */
  readonly maxBytes: number;
  /** `gateway.pending.bad_retention_days`: age after which a `.bad` file may be pruned. Default 30. */
  readonly badRetentionDays: number;
  /** `gateway.pending.snapshot_retention_days`: age after which an agent-history snapshot may be pruned. Default 30. */
  readonly snapshotRetentionDays: number;
}

/** Gateway settings (`gateway:`). */
export interface GatewayConfig {
  readonly pending: PendingSpoolConfig;
  /** `gateway.shutdown_flush_budget_ms`: time the shutdown flush may take on SIGTERM/SIGINT. Default 5000. */
  readonly shutdownFlushBudgetMs: number;
}

/** The validated, defaulted settings of config.yaml that the persistence packages use. */
export interface HermesConfig {
  readonly moa: MoaConfig;
  readonly agent: AgentConfig;
  readonly gateway: GatewayConfig;
}

/** 256 MiB. */
const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;

/**
 * A fresh copy of the defaults: what `loadConfig` returns for a missing or empty file.
 */
export function defaultConfig(): HermesConfig {
  return {
    moa: { saveTraces: false, traceDir: null, privacyFilter: 'off' },
    agent: { trajectoryAllowGitCwd: false },
    gateway: {
      pending: { maxFiles: 10_000, maxBytes: DEFAULT_MAX_BYTES, badRetentionDays: 30, snapshotRetentionDays: 30 },
      shutdownFlushBudgetMs: 5_000,
    },
  };
}

/** The `expected` text of each class of value, as messages show it. */
export const EXPECTED = {
  mapping: 'a mapping',
  boolean: 'a boolean',
  path: 'a non-empty path string',
  privacyFilter: 'off, display, full or a boolean',
  positiveInteger: 'a positive integer',
  nonNegativeNumber: 'a finite non-negative number',
} as const;

/** Receives a non-fatal coercion note for a key path (`['moa', 'privacy_filter']`). */
export type WarnSink = (keyPath: readonly string[], note: string) => void;

/** A key written with no value (`save_traces:`, i.e. YAML null) means "not set": the default applies. */
function nullAsUnset(value: unknown): unknown {
  return value === null ? undefined : value;
}

/** A missing or empty section (`moa:` with nothing under it) reads as an empty mapping. */
function emptySection(value: unknown): unknown {
  return value ?? {};
}

function section<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.preprocess(emptySection, z.object(shape, { error: EXPECTED.mapping }));
}

function booleanKey(keyPath: readonly string[], fallback: boolean, warn: WarnSink) {
  return z.preprocess(
    nullAsUnset,
    z
      .unknown()
      .transform((value, ctx): boolean => {
        if (value === undefined) return fallback;
        const read = coerceBoolean(value);
        if (read === undefined) {
          ctx.issues.push({ code: 'custom', message: EXPECTED.boolean, input: value });
          return z.NEVER;
        }
        if (read.note !== null) warn(keyPath, `${read.note}; write true or false`);
        return read.value;
      }),
  );
}

function positiveInteger(fallback: number) {
  return z.preprocess(
    nullAsUnset,
    z
      .int({ error: EXPECTED.positiveInteger })
      .positive({ error: EXPECTED.positiveInteger })
      .default(fallback),
  );
}

function nonNegativeNumber(fallback: number) {
  return z.preprocess(
    nullAsUnset,
    z
      .number({ error: EXPECTED.nonNegativeNumber })
      .nonnegative({ error: EXPECTED.nonNegativeNumber })
      .default(fallback),
  );
}

const traceDir = z.preprocess(
  nullAsUnset,
  z
    .string({ error: EXPECTED.path })
    .refine((text) => text.trim() !== '' && !text.includes('\0'), { error: EXPECTED.path })
    .optional(),
);

function privacyFilterKey(keyPath: readonly string[], warn: WarnSink) {
  return z.preprocess(
    nullAsUnset,
    z
      .union([z.string(), z.number(), z.boolean(), z.undefined()], { error: EXPECTED.privacyFilter })
      .transform((value): PrivacyFilter => {
        const read = coercePrivacyFilter(value);
        if (read.note !== null) warn(keyPath, read.note);
        return read.mode;
      }),
  );
}

/**
 * Build the schema of the validated keys. It reads the plain data of a parsed config.yaml (snake_case
 * keys, unknown keys ignored) and outputs a {@link HermesConfig}. Coercion notes go to `warn`; invalid
 * values become zod issues whose `path` is the YAML key path and whose `message` is the expected text.
 */
export function buildSchema(warn: WarnSink) {
  const defaults = defaultConfig();
  const moa = section({
    save_traces: booleanKey(['moa', 'save_traces'], defaults.moa.saveTraces, warn),
    trace_dir: traceDir,
    privacy_filter: privacyFilterKey(['moa', 'privacy_filter'], warn),
  }).transform(
    (m): MoaConfig => ({ saveTraces: m.save_traces, traceDir: m.trace_dir ?? null, privacyFilter: m.privacy_filter }),
  );
  const agent = section({
    trajectory_allow_git_cwd: booleanKey(
      ['agent', 'trajectory_allow_git_cwd'],
      defaults.agent.trajectoryAllowGitCwd,
      warn,
    ),
  }).transform((a): AgentConfig => ({ trajectoryAllowGitCwd: a.trajectory_allow_git_cwd }));
  const pending = section({
    max_files: positiveInteger(defaults.gateway.pending.maxFiles),
    max_bytes: positiveInteger(defaults.gateway.pending.maxBytes),
    bad_retention_days: nonNegativeNumber(defaults.gateway.pending.badRetentionDays),
    snapshot_retention_days: nonNegativeNumber(defaults.gateway.pending.snapshotRetentionDays),
  }).transform(
    (p): PendingSpoolConfig => ({
      maxFiles: p.max_files,
      maxBytes: p.max_bytes,
      badRetentionDays: p.bad_retention_days,
      snapshotRetentionDays: p.snapshot_retention_days,
    }),
  );
  const gateway = section({
    pending,
    shutdown_flush_budget_ms: positiveInteger(defaults.gateway.shutdownFlushBudgetMs),
  }).transform((g): GatewayConfig => ({ pending: g.pending, shutdownFlushBudgetMs: g.shutdown_flush_budget_ms }));
  return z
    .object({ moa, agent, gateway }, { error: EXPECTED.mapping })
    .transform((c): HermesConfig => ({ moa: c.moa, agent: c.agent, gateway: c.gateway }));
}
