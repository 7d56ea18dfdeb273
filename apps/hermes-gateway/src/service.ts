/**
 * The service's lifecycle: take the home's gateway lock, listen (every probe 503), recover the spool into
 * state.db, only then ready; on SIGTERM/SIGINT (the stop contract's signals) stop accepting, make every queued
 * message durable through @hermes/gateway's shutdown hook, and exit with its status.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadConfigSync } from '@hermes/config';
import { loadEnvironment, type FsPolicyLogger } from '@hermes/fs-policy';
import { installShutdownHook, type ShutdownOutcome } from '@hermes/gateway';
import { createMoaTracer } from '@hermes/moa-trace';
import { openSessionDb } from '@hermes/session-db';
import { GroupCommitter } from './committer.js';
import { GatewayCore } from './core.js';
import { buildHttp } from './http.js';
import { installJsonLogger, type LogLevel } from './log.js';
import { Metrics } from './metrics.js';
import { RecoveryThread } from './recovery-client.js';
import { templateRunner, type Runner } from './runner.js';
import { TurnScheduler } from './turns.js';

export interface GatewayOptions {
  /** The Hermes home (state.db, pending_messages/, gateway.lock/, sessions/saved/ …). */
  readonly home: string;
  /** Default 127.0.0.1 (loopback only). */
  readonly host?: string;
  /** Default 8642; 0 picks a free port. */
  readonly port?: number;
  readonly logLevel?: LogLevel;
  /** Extra group-commit window in ms (default 0: commit what queued during the previous commit). */
  readonly commitWindowMs?: number;
  /** The runner; default {@link templateRunner} with the three options below. */
  readonly runner?: Runner;
  readonly turnLatencyMs?: number;
  readonly replyTemplate?: string;
  readonly moaAdvisors?: number;
  /** The stop's budget (ms); default config.yaml's gateway.shutdown_flush_budget_ms (5000). */
  readonly stopBudgetMs?: number;
  readonly bodyLimit?: number;
  /** Written (JSON `{ url, pid }`, atomically) once the service is ready. */
  readonly readyFile?: string;
  /** Print the URL on stdout once ready. */
  readonly printUrl?: boolean;
  /** Test hook only: acknowledge before the commit (HERMES_GATEWAY_PLANT=ack-before-fsync). */
  readonly plantAckBeforeFsync?: boolean;
}

export interface RunningGateway {
  readonly url: string;
  readonly core: GatewayCore;
  /** Runs the stop sequence as a SIGTERM would (the process exits with its status). */
  stop(): void;
}

/** A start-up refusal with the exit status the bin uses (2: lock held, 78: config invalid). */
export class StartError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    readonly code: string,
    readonly hint: string,
  ) {
    super(message);
    this.name = 'StartError';
  }
}

function writeReadyFile(file: string, url: string): void {
  const tmp = `${file}.${String(process.pid)}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify({ url, pid: process.pid })}\n`);
  fs.renameSync(tmp, file);
}

/** Starts the gateway (see the module comment); resolves once it is ready. */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const level = options.logLevel ?? 'info';
  const logger: FsPolicyLogger = installJsonLogger(level);
  const home = path.resolve(options.home);
  let config;
  try {
    config = loadConfigSync(home).config;
  } catch (err) {
    throw new StartError(`config.yaml: ${(err as Error).message}`, 78, 'ECONFIG', `fix ${path.join(home, 'config.yaml')}`);
  }
  const env = loadEnvironment({ home });
  const thread = new RecoveryThread(home, level);
  try {
    await thread.lock();
  } catch (err) {
    const e = err as { code?: string; message: string; hint?: string };
    throw new StartError(e.message, 2, e.code ?? 'ELOCKED', e.hint ?? 'stop the other gateway of this home first');
  }
  const db = openSessionDb({ home, env });
  const metrics = new Metrics();
  const committer = new GroupCommitter({
    db,
    home,
    env,
    metrics,
    logger,
    windowMs: options.commitWindowMs ?? 0,
    drain: async () => {
      const s = await thread.recover();
      metrics.recovered += s.inserted;
      return { clean: s.storeErrors === 0 && s.errors === 0, inserted: s.inserted };
    },
  });
  const tracer = createMoaTracer({ home, env, saveTraces: options.moaAdvisors !== undefined && options.moaAdvisors > 0 ? true : config.moa.saveTraces, traceDir: config.moa.traceDir, privacyFilter: config.moa.privacyFilter });
  const core = new GatewayCore({ home, env, db, metrics, logger, committer, tracer, plantAckBeforeFsync: options.plantAckBeforeFsync === true });
  const runner = options.runner ?? templateRunner({ latencyMs: options.turnLatencyMs ?? 0, template: options.replyTemplate ?? 'echo: {text}', moaAdvisors: options.moaAdvisors ?? 0 });
  core.turns = new TurnScheduler(runner, (input, result) => core.storeReply(input, result), logger);
  if (options.plantAckBeforeFsync === true) logger.warn('PLANTED BUG active (HERMES_GATEWAY_PLANT=ack-before-fsync): messages are acknowledged before they are durable — a test hook, never for use');

  const app = buildHttp(core, options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit });
  const hook = installShutdownHook({
    budgetMs: options.stopBudgetMs ?? config.gateway.shutdownFlushBudgetMs,
    flush: () => {
      const queued = committer.queued;
      core.phase = 'draining';
      core.turns?.stop();
      app.server.close();
      logger.info(`stopping: no new requests; ${String(queued)} queued message(s) made durable`, { queued });
      return committer.flushForStop();
    },
    onComplete: (outcome: ShutdownOutcome) => {
      logger.info('stopped', { exitCode: outcome.exitCode, signal: outcome.signal, messages: outcome.messages, complete: outcome.complete, acks: metrics.acks, commits: metrics.commits });
      if (!thread.releaseSync()) logger.warn('the gateway lock was not released in time; the next start proves this process dead and takes it over');
    },
  });

  core.phase = 'recovering';
  await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 8642 });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port ?? 8642;
  const url = `http://${options.host ?? '127.0.0.1'}:${String(port)}`;
  logger.info('listening; recovering the spool before ready', { url, home });
  const s = await thread.recover();
  metrics.recovered += s.inserted;
  if (s.storeErrors > 0 || s.errors > 0) {
    logger.warn(`start-up recovery left ${String(s.kept)} file(s) in the spool (state.db unavailable?): messages go to the spool until it works`, { ...s });
  }
  core.phase = 'ready';
  logger.info('ready', { url, home, recovered: s.inserted, recoveryMs: s.elapsedMs, scanned: s.scanned, pid: process.pid });
  if (options.readyFile !== undefined) writeReadyFile(options.readyFile, url);
  if (options.printUrl === true) process.stdout.write(`${url}\n`);
  // Under a process manager that waits for it (PM2's wait_ready), "ready" goes over the IPC channel only now,
  // after the recovery: a restart is not complete before the spool is back in state.db.
  if (typeof process.send === 'function' && process.connected) {
    process.send('ready', undefined, undefined, (err: Error | null) => {
      if (err !== null) logger.warn(`could not tell the parent process "ready" over IPC: ${err.message}`, { code: (err as { code?: unknown }).code });
    });
  }
  return { url, core, stop: () => void hook.trigger('SIGTERM') };
}
