/** The agent behind the gateway: a pluggable runner, and the deterministic offline one this service ships. */
import type { MoaTurn } from '@hermes/moa-trace';

/** One turn's input: the user message the turn answers. */
export interface TurnInput {
  readonly sessionKey: string;
  readonly sessionId: string;
  readonly messageId: number | null;
  readonly text: string;
}

/** A turn's result: the reply to store, and optionally the Mixture-of-Agents turn to trace. */
export interface TurnResult {
  readonly reply: string;
  readonly moa?: MoaTurn;
}

/** Runs one turn. A runner may take any time; the gateway runs one turn per session at a time. */
export interface Runner {
  run(input: TurnInput): Promise<TurnResult>;
}

export interface TemplateRunnerOptions {
  /** Milliseconds a turn takes (default 0). */
  readonly latencyMs?: number;
  /** The reply; `{text}` and `{session}` are replaced (default `echo: {text}`). */
  readonly template?: string;
  /** With n > 0, a Mixture-of-Agents fan-out of n advisors and one aggregator, all deterministic. */
  readonly moaAdvisors?: number;
}

/**
 * The shipped runner: deterministic and offline — the same input always gives the same reply, after
 * `latencyMs`. With `moaAdvisors`, each advisor answers `advisor <i>: <text>` and the aggregator's answer is
 * the reply, returned as a MoA turn for @hermes/moa-trace.
 */
export function templateRunner(options: TemplateRunnerOptions = {}): Runner {
  const latency = options.latencyMs ?? 0;
  const template = options.template ?? 'echo: {text}';
  const advisors = options.moaAdvisors ?? 0;
  return {
    async run(input) {
      if (latency > 0) await new Promise((resolve) => setTimeout(resolve, latency));
      const reply = template.replaceAll('{text}', input.text).replaceAll('{session}', input.sessionKey);
      if (advisors <= 0) return { reply };
      const question = [{ role: 'user', content: input.text }];
      const references = Array.from({ length: advisors }, (_, i) => ({
        label: `advisor-${String(i + 1)}`,
        model: `offline-advisor-${String(i + 1)}`,
        provider: 'offline',
        inputMessages: question,
        output: `advisor ${String(i + 1)}: ${input.text}`,
      }));
      const moa: MoaTurn = {
        sessionId: input.sessionId,
        preset: 'offline',
        references,
        aggregator: { label: 'aggregator', model: 'offline-aggregator', provider: 'offline', inputMessages: question, output: reply, streamed: false },
      };
      return { reply, moa };
    },
  };
}
