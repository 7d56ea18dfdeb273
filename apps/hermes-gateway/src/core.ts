/**
 * What the HTTP adapter calls: post a message (acknowledged once durable, exactly once per idempotency key),
 * read a transcript, save it through @hermes/cli, end a session (trajectory through @hermes/trajectory).
 */
import * as path from 'node:path';
import { renderConversation, saveConversation, type SaveFormat } from '@hermes/cli';
import type { FsPolicyLogger, HermesEnvironment } from '@hermes/fs-policy';
import { spoolStats } from '@hermes/gateway';
import type { MoaTracer } from '@hermes/moa-trace';
import type { SessionDb } from '@hermes/session-db';
import { saveTrajectory, toShareGpt, type ChatMessage } from '@hermes/trajectory';
import type { GroupCommitter } from './committer.js';
import { monotonicClock, sessionIdFor } from './ids.js';
import type { Metrics } from './metrics.js';
import type { TurnInput, TurnResult } from './runner.js';
import type { Job, JobOutcome } from './spool.js';
import type { TurnScheduler, TurnState } from './turns.js';

export type Phase = 'starting' | 'recovering' | 'ready' | 'draining';

/** The body of a message's 2xx: how it is durable, and the id it got. */
export interface PostResult {
  readonly ok: true;
  readonly session: string;
  readonly sessionId: string;
  /** state.db row id; null while the message is in the spool (it gets one when recovered). */
  readonly id: number | null;
  readonly status: 'committed' | 'spooled';
  /** True when this answer repeats an earlier acknowledgement of the same Idempotency-Key (HTTP 200). */
  readonly replayed: boolean;
  readonly idempotencyKey: string | null;
  readonly spoolFile?: string;
}

export interface CoreOptions {
  readonly home: string;
  readonly env?: HermesEnvironment;
  readonly db: SessionDb;
  readonly metrics: Metrics;
  readonly logger: FsPolicyLogger;
  readonly committer: GroupCommitter;
  readonly tracer?: MoaTracer;
  /** Test hook (HERMES_GATEWAY_PLANT=ack-before-fsync): acknowledge before the commit. Never in production. */
  readonly plantAckBeforeFsync?: boolean;
}

export class GatewayCore {
  phase: Phase = 'starting';
  readonly metrics: Metrics;
  readonly logger: FsPolicyLogger;
  readonly committer: GroupCommitter;
  turns: TurnScheduler | undefined;
  readonly #o: CoreOptions;
  readonly #clock = monotonicClock();
  readonly #inflight = new Map<string, Promise<PostResult>>();
  /** Keys acknowledged as spooled by this process (their rows do not exist until recovery). */
  readonly #spooled = new Map<string, PostResult>();

  constructor(options: CoreOptions) {
    this.#o = options;
    this.metrics = options.metrics;
    this.logger = options.logger;
    this.committer = options.committer;
  }

  #enqueue(job: Omit<Job, 'resolve' | 'reject' | 'enqueuedAt'>): Promise<JobOutcome> {
    return new Promise<JobOutcome>((resolve, reject) => {
      this.committer.submit({ ...job, enqueuedAt: performance.now(), resolve, reject });
    });
  }

  /**
   * Makes one user message durable and returns its acknowledgement: `committed` (in state.db, group commit)
   * or `spooled` (fsynced in the spool while state.db is unavailable). The same (session, Idempotency-Key)
   * again returns the first acknowledgement's id with `replayed: true` and stores nothing. Rejects when the
   * message could not be made durable: then nothing was acknowledged.
   */
  post(sessionKey: string, text: string, idempotencyKey: string | undefined): Promise<PostResult> {
    const started = performance.now();
    const sessionId = sessionIdFor(sessionKey);
    const slot = idempotencyKey === undefined ? undefined : `${sessionId}\u0000${idempotencyKey}`;
    if (slot !== undefined) {
      const spooled = this.#spooled.get(slot);
      if (spooled !== undefined) return Promise.resolve(this.#replay(spooled));
      const running = this.#inflight.get(slot);
      if (running !== undefined) return running.then((r) => this.#replay(r));
    }
    const job = this.#enqueue({ sessionKey, sessionId, role: 'user', content: text, timestamp: this.#clock(), idempotencyKey });
    const result = (this.#o.plantAckBeforeFsync === true ? this.#plantedAck(job) : job).then((o): PostResult => {
      const r: PostResult = {
        ok: true,
        session: sessionKey,
        sessionId,
        id: o.status === 'committed' ? o.id : null,
        status: o.status,
        replayed: o.status === 'committed' && o.duplicate,
        idempotencyKey: idempotencyKey ?? null,
        ...(o.status === 'spooled' ? { spoolFile: path.basename(o.file) } : {}),
      };
      if (r.replayed) this.metrics.acks.replayed++;
      else this.metrics.acks[r.status]++;
      this.metrics.ackSeconds.observe((performance.now() - started) / 1000);
      if (o.status === 'spooled' && slot !== undefined) this.#spooled.set(slot, r);
      if (!r.replayed) this.turns?.accept({ sessionKey, sessionId, messageId: r.id, text });
      return r;
    });
    if (slot !== undefined) {
      this.#inflight.set(slot, result);
      const forget = (): void => {
        this.#inflight.delete(slot);
      };
      result.then(forget, forget);
    }
    return result;
  }

  /** The planted bug: acknowledges at once, while the commit has not even started. */
  #plantedAck(job: Promise<JobOutcome>): Promise<JobOutcome> {
    job.catch((err: unknown) => {
      this.logger.error(`planted ack-before-fsync: an acknowledged message was not committed: ${(err as Error).message}`);
    });
    return Promise.resolve({ status: 'committed', id: null, duplicate: false });
  }

  #replay(r: PostResult): PostResult {
    this.metrics.acks.replayed++;
    return { ...r, replayed: true };
  }

  /** Stores a turn's reply (group-committed like a message) and traces its MoA fan-out, if any. */
  async storeReply(input: TurnInput, result: TurnResult): Promise<void> {
    this.metrics.turns++;
    await this.#enqueue({ sessionKey: input.sessionKey, sessionId: input.sessionId, role: 'assistant', content: result.reply, timestamp: this.#clock(), idempotencyKey: undefined });
    if (result.moa !== undefined && this.#o.tracer?.enabled === true) await this.#o.tracer.record(result.moa);
  }

  /** The session's transcript from state.db (and its turn state), or undefined when it has no session. */
  transcript(sessionKey: string): (ReturnType<SessionDb['exportSession']> & { key: string; turns: TurnState }) | undefined {
    const exported = this.#o.db.exportSession(sessionIdFor(sessionKey));
    if (exported === undefined) return undefined;
    return { ...exported, key: sessionKey, turns: this.turns?.state(sessionKey) ?? { busy: false, pending: 0, overflow: 0 } };
  }

  /** The `/save` command: writes the snapshot under `<home>/sessions/saved/` and returns the same text. */
  async save(sessionKey: string, format: SaveFormat): Promise<{ text: string; path: string; fileName: string } | undefined> {
    const exported = this.#o.db.exportSession(sessionIdFor(sessionKey));
    if (exported === undefined) return undefined;
    const saved = await saveConversation(exported, { home: this.#o.home, format, ...(this.#o.env === undefined ? {} : { env: this.#o.env }) });
    return { text: renderConversation(exported, format), path: saved.path, fileName: path.basename(saved.path) };
  }

  /** Ends a session (`ended_at`, reason `gateway_end`) and appends its trajectory (ShareGPT) to the home. */
  async end(sessionKey: string): Promise<{ ended: true; trajectory: string; warnings: readonly string[] } | undefined> {
    const id = sessionIdFor(sessionKey);
    const exported = this.#o.db.exportSession(id);
    if (exported === undefined) return undefined;
    this.#o.db.endSession(id, 'gateway_end');
    const messages: ChatMessage[] = exported.messages.map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content) }));
    const { conversations, warnings } = toShareGpt(messages, { systemPrompt: null });
    const saved = await saveTrajectory(conversations, { home: this.#o.home, cwd: this.#o.home, model: exported.model ?? 'offline', completed: true });
    return { ended: true, trajectory: saved.path, warnings };
  }

  /** The Prometheus text of /metrics (the spool gauges are measured now). */
  metricsText(): string {
    let files: number;
    let bytes = 0;
    try {
      const s = spoolStats({ home: this.#o.home, ...(this.#o.env === undefined ? {} : { env: this.#o.env }) });
      files = s.count;
      bytes = s.bytes;
    } catch (err) {
      this.logger.warn(`metrics: spool statistics failed: ${(err as Error).message}`, { code: (err as { code?: unknown }).code });
      files = -1;
    }
    return this.metrics.render({ spoolFiles: files, spoolBytes: bytes, queued: this.committer.queued, ready: this.phase === 'ready' });
  }
}
