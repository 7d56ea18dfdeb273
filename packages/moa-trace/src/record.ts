import { redactPrivacy, redactValue } from '@hermes/redact';

/** Which surfaces the privacy filter redacts (config `moa.privacy_filter`). */
export type PrivacyFilterMode = 'off' | 'display' | 'full';
export const PRIVACY_FILTER_MODES: readonly PrivacyFilterMode[] = ['off', 'display', 'full'];

/** A chat message as sent to a model (OpenAI style); any JSON-like object. */
export type MoaMessage = object;

/** Token counts of one model call, as the accounting object reports them. */
export interface MoaUsage {
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
  readonly cacheReadTokens?: number | undefined;
  readonly cacheWriteTokens?: number | undefined;
  readonly reasoningTokens?: number | undefined;
}

/** One advisor (reference model) of a MoA turn. */
export interface MoaReferenceSlot {
  readonly label: string;
  readonly model: string;
  readonly provider: string;
  readonly temperature?: number | null | undefined;
  /** The full list sent to the advisor, including its system prompt. */
  readonly inputMessages: readonly MoaMessage[];
  /** The advisor's full text. */
  readonly output: string;
  readonly usage?: MoaUsage | null | undefined;
  readonly costUsd?: number | null | undefined;
  readonly costStatus?: string | null | undefined;
  readonly costSource?: string | null | undefined;
}

/** The aggregator of a MoA turn. */
export interface MoaAggregatorSlot {
  readonly label: string;
  readonly model: string;
  readonly provider: string;
  readonly temperature?: number | null | undefined;
  /** The exact request, including the injected "[Mixture of Agents reference context]" guidance block. */
  readonly inputMessages: readonly MoaMessage[];
  /**
   * The aggregator's text: the extracted output when it did not stream; when it streamed, the streamed text
   * if the caller captured it (an empty string counts as missing).
   */
  readonly output?: string | null | undefined;
  readonly streamed: boolean;
}

/** One Mixture-of-Agents turn, as the caller hands it to `record()`. */
export interface MoaTurn {
  /** The raw session id (written as is; the file name is sanitized). */
  readonly sessionId?: string | null | undefined;
  readonly preset: string;
  readonly references: readonly MoaReferenceSlot[];
  readonly aggregator: MoaAggregatorSlot;
}

/** Where the aggregator's answer can be found. */
export type OutputLocation = 'inline' | 'inline_from_stream' | 'assistant_message_in_session_db';

/** The `usage` object on disk: all five counts, or `{}` when the call reported none. */
export type TraceUsage =
  | {
      readonly input_tokens: number;
      readonly output_tokens: number;
      readonly cache_read_tokens: number;
      readonly cache_write_tokens: number;
      readonly reasoning_tokens: number;
    }
  | Readonly<Record<string, never>>;

/** One line of `<session>.jsonl` (the reference's record, field order included). */
export interface MoaTraceRecord {
  /** Epoch seconds (float, millisecond resolution), as the reference's `time.time()`. */
  readonly ts: number;
  readonly session_id: string | null;
  readonly preset: string;
  readonly references: readonly {
    readonly label: string;
    readonly model: string;
    readonly provider: string;
    readonly temperature: number | null;
    readonly input_messages: readonly MoaMessage[];
    readonly output: string;
    readonly usage: TraceUsage;
    readonly cost_usd: number | null;
    readonly cost_status: string | null;
    readonly cost_source: string | null;
  }[];
  readonly aggregator: {
    readonly label: string;
    readonly model: string;
    readonly provider: string;
    readonly temperature: number | null;
    readonly input_messages: readonly MoaMessage[];
    readonly output: string | null;
    readonly streamed: boolean;
    readonly output_location: OutputLocation;
  };
}

/** The copy of a turn's reference outputs meant for a UI (`moa.reference` events). */
export interface MoaUiEvent {
  readonly preset: string;
  readonly references: readonly {
    readonly label: string;
    readonly model: string;
    readonly provider: string;
    readonly output: string;
  }[];
}

/**
 * `inline` when the aggregator did not stream; when it streamed, `inline_from_stream` if its text was
 * captured (non-empty), else `assistant_message_in_session_db` (the answer lives only in the session DB).
 */
export function outputLocation(streamed: boolean, output: string | null | undefined): OutputLocation {
  if (!streamed) return 'inline';
  return typeof output === 'string' && output !== '' ? 'inline_from_stream' : 'assistant_message_in_session_db';
}

/** Text through `redactPrivacy` when the filter is on; as it is when off. */
export function filterText(mode: PrivacyFilterMode, text: string): string {
  return mode === 'off' ? text : redactPrivacy(text);
}

/** A redacted deep copy of every string in `messages` when the filter is on; the same array when off. */
export function filterMessages<T extends readonly MoaMessage[]>(mode: PrivacyFilterMode, messages: T): T {
  return mode === 'off' ? messages : redactValue(messages, redactPrivacy);
}

/**
 * The live aggregator input to send: the caller's array untouched under `off` and `display` (the model sees
 * the raw request), a redacted copy under `full`.
 */
export function liveAggregatorInput<T extends readonly MoaMessage[]>(mode: PrivacyFilterMode, messages: T): T {
  return mode === 'full' ? redactValue(messages, redactPrivacy) : messages;
}

/** The UI copy of a turn's reference outputs: redacted under `display` and `full`. */
export function uiEventFor(mode: PrivacyFilterMode, turn: Pick<MoaTurn, 'preset' | 'references'>): MoaUiEvent {
  return {
    preset: turn.preset,
    references: turn.references.map((r) => ({
      label: r.label,
      model: r.model,
      provider: r.provider,
      output: filterText(mode, r.output),
    })),
  };
}

function usageOf(usage: MoaUsage | null | undefined): TraceUsage {
  if (usage === null || usage === undefined) return {};
  return {
    input_tokens: usage.inputTokens ?? 0,
    output_tokens: usage.outputTokens ?? 0,
    cache_read_tokens: usage.cacheReadTokens ?? 0,
    cache_write_tokens: usage.cacheWriteTokens ?? 0,
    reasoning_tokens: usage.reasoningTokens ?? 0,
  };
}

function aggregatorOutput(aggregator: MoaAggregatorSlot): string | null {
  const output = aggregator.output;
  if (typeof output !== 'string') return null;
  return aggregator.streamed && output === '' ? null : output;
}

/**
 * The record written for `turn` at epoch-milliseconds `nowMs`. Under `display` and `full` every model
 * input and output in it (reference `input_messages` and `output`, aggregator `input_messages` and
 * `output`) is a `redactPrivacy` copy; labels, models, providers and numbers are kept. The caller's
 * objects are never mutated.
 */
export function buildTraceRecord(mode: PrivacyFilterMode, turn: MoaTurn, nowMs: number): MoaTraceRecord {
  const aggregator = turn.aggregator;
  const output = aggregatorOutput(aggregator);
  return {
    ts: nowMs / 1000,
    session_id: turn.sessionId ?? null,
    preset: turn.preset,
    references: turn.references.map((r) => ({
      label: r.label,
      model: r.model,
      provider: r.provider,
      temperature: r.temperature ?? null,
      input_messages: filterMessages(mode, r.inputMessages),
      output: filterText(mode, r.output),
      usage: usageOf(r.usage),
      cost_usd: r.costUsd ?? null,
      cost_status: r.costStatus ?? null,
      cost_source: r.costSource ?? null,
    })),
    aggregator: {
      label: aggregator.label,
      model: aggregator.model,
      provider: aggregator.provider,
      temperature: aggregator.temperature ?? null,
      input_messages: filterMessages(mode, aggregator.inputMessages),
      output: output === null ? null : filterText(mode, output),
      streamed: aggregator.streamed,
      output_location: outputLocation(aggregator.streamed, aggregator.output),
    },
  };
}
