/**
 * What the chaos test drives: PM2 (from the registry, its daemon under a temp PM2_HOME, never ~/.pm2), a small
 * tmpfs home that can be filled and freed, and clients that send messages with idempotency keys and retry with
 * the same key until a 2xx.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
/** PM2's CLI script (the app's devDependency). */
export const PM2_BIN = path.join(path.dirname(require.resolve('pm2/package.json')), 'bin', 'pm2');
/** The ecosystem file shipped with the app. */
export const PM2_CONFIG = fileURLToPath(new URL('../pm2.config.cjs', import.meta.url));
export const APP_NAME = 'hermes-gateway';

/** The shipped ecosystem file's settings (what a restart passes back explicitly). */
export function shippedPm2Settings(): { kill_timeout: number; listen_timeout: number } {
  const conf = require(PM2_CONFIG) as { apps: { kill_timeout: number; listen_timeout: number }[] };
  const app = conf.apps[0];
  if (app === undefined) throw new Error(`${PM2_CONFIG} declares no app`);
  return { kill_timeout: app.kill_timeout, listen_timeout: app.listen_timeout };
}

/** A deterministic PRNG (mulberry32): the chaos order is reproducible from the printed seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function shuffle<T>(items: readonly T[], rnd: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A TCP port free on loopback right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => {
        if (typeof a === 'object' && a !== null) resolve(a.port);
        else reject(new Error('no port'));
      });
    });
  });
}

/** PM2's CLI against one private daemon (its PM2_HOME under `root`). Never blocks the event loop. */
export class Pm2 {
  readonly home: string;
  constructor(root: string) {
    this.home = path.join(root, 'pm2');
  }

  /** Runs `pm2 …args`; rejects with its output when it exits non-zero. */
  run(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(
        process.execPath,
        [PM2_BIN, ...args],
        { env: { ...process.env, NODE_OPTIONS: undefined, HERMES_HOME: undefined, ...env, PM2_HOME: this.home }, timeout: 60_000, maxBuffer: 16 << 20 },
        (err, stdout, stderr) => {
          if (err !== null) reject(new Error(`pm2 ${args.join(' ')} failed (${String(err.code ?? err.signal)}):\n${stdout}\n${stderr}`));
          else resolve(stdout);
        },
      );
    });
  }

  /** The app's pid as PM2 reports it (0 when it has none). */
  async pid(): Promise<number> {
    const out = await this.run(['pid', APP_NAME]);
    return Number(out.trim().split('\n').pop() ?? '0') || 0;
  }

  /** PM2's record of the app: restarts counted by PM2, status. */
  async describe(): Promise<{ restarts: number; status: string; pid: number }> {
    const out = await this.run(['jlist']);
    const list = JSON.parse(out.slice(out.indexOf('['))) as { name: string; pid: number; pm2_env: { restart_time: number; status: string } }[];
    const app = list.find((p) => p.name === APP_NAME);
    if (app === undefined) throw new Error(`pm2 jlist has no ${APP_NAME}: ${out}`);
    return { restarts: app.pm2_env.restart_time, status: app.pm2_env.status, pid: app.pid };
  }

  /** Stops every app and the daemon (`pm2 kill`); never throws (the test's end must always run it). */
  async kill(): Promise<void> {
    await this.run(['kill']).catch((err: unknown) => {
      console.error(`pm2 kill: ${(err as Error).message}`);
    });
  }

  /** Lines of PM2's daemon log holding every one of `parts`. */
  logLines(...parts: string[]): number {
    try {
      return fs.readFileSync(path.join(this.home, 'pm2.log'), 'utf8').split('\n').filter((l) => parts.every((p) => l.includes(p))).length;
    } catch {
      return 0;
    }
  }

  /** How often PM2's daemon SIGKILLed an app still alive after its kill_timeout (its own log says so). */
  sigkills(): number {
    return this.logLines('still alive after', 'sending SIGKILL');
  }

  /** The app's stderr log as PM2 kept it (JSON lines). */
  errorLog(): string {
    const dir = path.join(this.home, 'logs');
    try {
      return fs.readdirSync(dir).filter((f) => f.includes('error')).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('');
    } catch {
      return '';
    }
  }
}

/** Polls `/readyz` until 200 from a pid other than `notPid` (when given); rejects after `timeoutMs`. */
export async function waitReady(url: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new Error(`${url}/readyz not 200 within ${String(timeoutMs)} ms`);
}

/** Fills the filesystem holding `dir` with a ballast file until ENOSPC; returns the bytes written. */
export function fillDisk(ballast: string): number {
  const fd = fs.openSync(ballast, 'w', 0o600);
  let written = 0;
  try {
    for (const size of [1 << 20, 1 << 12]) {
      const chunk = Buffer.alloc(size, 0x61);
      for (;;) {
        try {
          written += fs.writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return written;
}

export interface ClientStats {
  acked: number;
  /** Answers 201/202/200 by status. */
  readonly byStatus: Map<number, number>;
  /** Attempts that ended in a connection error or a 5xx and were retried with the same key. */
  retries: number;
  /** The acknowledged texts of each session, in the order they were sent (= acknowledged). */
  readonly ackedTexts: Map<string, string[]>;
  /** An answer the client cannot retry (a 4xx): a test failure. */
  readonly unexpected: string[];
}

/** One POST; a connection error or a timeout (15 s) answers status 0. */
function postOnce(agent: http.Agent, url: string, idempotencyKey: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      { method: 'POST', agent, timeout: 15_000, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'idempotency-key': idempotencyKey } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: text });
        });
        res.on('error', () => {
          resolve({ status: 0, body: '' });
        });
      },
    );
    req.on('timeout', () => {
      req.destroy(new Error('timeout'));
    });
    req.on('error', () => {
      resolve({ status: 0, body: '' });
    });
    req.end(body);
  });
}

/**
 * `sessions` clients, each sending `perSession` messages one after another to its own session, each with its
 * own Idempotency-Key; an attempt that fails to connect, times out or answers 5xx is retried with the same key
 * and text until a 2xx or `deadline` (epoch ms). `onAck` runs after each acknowledgement.
 */
export async function runClients(
  url: string,
  keys: readonly string[],
  perSession: number,
  deadline: number,
  onAck: () => void = () => undefined,
): Promise<ClientStats> {
  // node:http with one keep-alive connection per client: lighter than fetch, so the clients leave the CPU to the gateway.
  const agent = new http.Agent({ keepAlive: true, maxSockets: keys.length });
  const stats: ClientStats = { acked: 0, byStatus: new Map(), retries: 0, ackedTexts: new Map(), unexpected: [] };
  await Promise.all(
    keys.map(async (key, s) => {
      const acked: string[] = [];
      stats.ackedTexts.set(key, acked);
      for (let i = 0; i < perSession; i++) {
        const text = `s${String(s)}-m${String(i)}`;
        for (;;) {
          if (Date.now() > deadline) return;
          const { status, body } = await postOnce(agent, `${url}/v1/sessions/${encodeURIComponent(key)}/messages`, `k-${text}`, JSON.stringify({ text }));
          if (status >= 200 && status < 300) {
            stats.byStatus.set(status, (stats.byStatus.get(status) ?? 0) + 1);
            acked.push(text);
            stats.acked++;
            onAck();
            break;
          }
          if (status !== 0 && status < 500) {
            stats.unexpected.push(`${String(status)} for ${text}: ${body}`);
            return;
          }
          stats.retries++;
          await sleep(status === 0 ? 25 : 10);
        }
      }
    }),
  );
  agent.destroy();
  return stats;
}

/** What state.db holds against what was acknowledged: the line the chaos test prints. */
export interface Verdict {
  acked: number;
  delivered: number;
  duplicates: number;
  lost: number;
  /** Sessions whose rows are not exactly their acknowledged texts in send order. */
  outOfOrder: number;
}

/** Compares each session's user rows (transcript order) with its acknowledged texts. */
export function judge(ackedTexts: ReadonlyMap<string, readonly string[]>, rowsOf: (key: string) => readonly string[]): Verdict {
  const v: Verdict = { acked: 0, delivered: 0, duplicates: 0, lost: 0, outOfOrder: 0 };
  for (const [key, acked] of ackedTexts) {
    const rows = rowsOf(key);
    const counts = new Map<string, number>();
    for (const r of rows) counts.set(r, (counts.get(r) ?? 0) + 1);
    for (const n of counts.values()) if (n > 1) v.duplicates += n - 1;
    v.acked += acked.length;
    for (const t of acked) {
      if (counts.has(t)) v.delivered++;
      else v.lost++;
    }
    // Rows may end with messages sent but never acknowledged (the deadline); the acknowledged prefix must match.
    const prefix = rows.slice(0, acked.length);
    if (prefix.length !== acked.length || prefix.some((r, i) => r !== acked[i])) v.outOfOrder++;
  }
  return v;
}
