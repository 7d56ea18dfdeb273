/**
 * One turn at a time per session, as the reference gateway: a message that arrives while its session's turn
 * runs waits in the session's pending slot, and behind it in the overflow queue (first in, first out). Every
 * message here is already durable in state.db (or the spool): what waits is work, never the only copy.
 */
import type { FsPolicyLogger } from '@hermes/fs-policy';
import type { Runner, TurnInput, TurnResult } from './runner.js';

interface SessionTurns {
  busy: boolean;
  slot: TurnInput | null;
  readonly overflow: TurnInput[];
}

export interface TurnState {
  readonly busy: boolean;
  readonly pending: number;
  readonly overflow: number;
}

export class TurnScheduler {
  readonly #sessions = new Map<string, SessionTurns>();
  readonly #runner: Runner;
  readonly #onResult: (input: TurnInput, result: TurnResult) => Promise<void>;
  readonly #logger: FsPolicyLogger;
  #stopped = false;

  constructor(runner: Runner, onResult: (input: TurnInput, result: TurnResult) => Promise<void>, logger: FsPolicyLogger) {
    this.#runner = runner;
    this.#onResult = onResult;
    this.#logger = logger;
  }

  /** Hands a durable message to its session: run now when idle, else wait in the slot / overflow queue. */
  accept(input: TurnInput): void {
    if (this.#stopped) return;
    let s = this.#sessions.get(input.sessionKey);
    if (s === undefined) {
      s = { busy: false, slot: null, overflow: [] };
      this.#sessions.set(input.sessionKey, s);
    }
    if (!s.busy) {
      this.#run(s, input);
      return;
    }
    if (s.slot === null) s.slot = input;
    else s.overflow.push(input);
  }

  state(sessionKey: string): TurnState {
    const s = this.#sessions.get(sessionKey);
    return { busy: s?.busy ?? false, pending: s?.slot === null || s === undefined ? 0 : 1, overflow: s?.overflow.length ?? 0 };
  }

  /** Starts no further turn (a stop); turns already running finish or are cut by the exit. */
  stop(): void {
    this.#stopped = true;
  }

  #run(s: SessionTurns, input: TurnInput): void {
    s.busy = true;
    void (async () => {
      try {
        const result = await this.#runner.run(input);
        if (!this.#stopped) await this.#onResult(input, result);
      } catch (err) {
        this.#logger.error(`turn of session ${input.sessionKey} failed: ${(err as Error).message}`, { session: input.sessionKey, code: (err as { code?: unknown }).code });
      }
      s.busy = false;
      const next = s.slot;
      s.slot = s.overflow.shift() ?? null;
      if (next !== null && !this.#stopped) this.#run(s, next);
      else if (next === null) this.#sessions.delete(input.sessionKey);
    })();
  }
}
