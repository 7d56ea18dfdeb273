/** Real gateway child processes on loopback, and reading their state.db afterwards. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSessionDb } from '@hermes/session-db';
import { tempRoot } from '@hermes/test-utils';
import { sessionIdFor } from '../src/ids.js';

export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

export interface Child {
  readonly proc: ChildProcessWithoutNullStreams;
  /** The URL from the "listening" log line (known before ready). */
  readonly url: string;
  readonly home: string;
  stderr(): string;
  /** Resolves with the exit status (or 128 + signal number for a signal death). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once the "ready" log line was written. */
  readonly ready: Promise<void>;
}

export function freshHome(): string {
  return path.join(tempRoot('hermes-gw-test-'), 'home');
}

/** Starts `hermes-gateway --home home --port 0 …args`; resolves once it listens (not yet ready). */
export async function startChild(home: string, args: readonly string[] = [], env: Record<string, string> = {}): Promise<Child> {
  const proc = spawn(process.execPath, [BIN, '--home', home, '--port', '0', ...args], {
    env: { ...process.env, HERMES_HOME: undefined, NODE_OPTIONS: undefined, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let err = '';
  let resolveUrl: (u: string) => void = () => undefined;
  let resolveReady: () => void = () => undefined;
  const url = new Promise<string>((r) => (resolveUrl = r));
  const ready = new Promise<void>((r) => (resolveReady = r));
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (chunk: string) => {
    err += chunk;
    for (const line of chunk.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const rec = JSON.parse(line) as { msg?: string; url?: string };
        if (typeof rec.url === 'string' && rec.msg?.startsWith('listening') === true) resolveUrl(rec.url);
        if (rec.msg === 'ready') resolveReady();
      } catch {
        // a partial line: the next chunk completes it (the URL line is short and comes first)
      }
    }
  });
  proc.stdout.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  const u = await Promise.race([
    url,
    exited.then(({ code }) => {
      throw new Error(`the gateway exited (${String(code)}) before listening:\n${err}`);
    }),
    new Promise<never>((_r, reject) => {
      setTimeout(() => {
        reject(new Error(`no listening line in 30 s:\n${err}`));
      }, 30_000);
    }),
  ]);
  return { proc, url: u, home, stderr: () => err, exited, ready };
}

/** Starts a child and waits until it is ready. */
export async function startReady(home: string, args: readonly string[] = [], env: Record<string, string> = {}): Promise<Child> {
  const c = await startChild(home, args, env);
  await Promise.race([c.ready, c.exited.then(({ code }) => Promise.reject(new Error(`exited ${String(code)}:\n${c.stderr()}`)))]);
  return c;
}

export interface Ack {
  readonly status: number;
  readonly body: { id?: number | null; status?: string; replayed?: boolean; error?: { code: string; message: string } };
  readonly ms: number;
}

/** POSTs one message; network errors resolve as status 0. */
export async function post(url: string, key: string, text: string, idempotencyKey?: string): Promise<Ack> {
  const started = performance.now();
  try {
    const res = await fetch(`${url}/v1/sessions/${encodeURIComponent(key)}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }) },
      body: JSON.stringify({ text }),
    });
    return { status: res.status, body: (await res.json()) as Ack['body'], ms: performance.now() - started };
  } catch {
    return { status: 0, body: {}, ms: performance.now() - started };
  }
}

/** A counter's value from /metrics. */
export async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} in /metrics`);
  return Number(line.split(' ')[1]);
}

/** The user messages of a session in state.db, in transcript order (timestamp, id), read with a fresh handle. */
export function userRows(home: string, key: string): { id: number; content: unknown; timestamp: number }[] {
  const db = openSessionDb({ home, readonly: true });
  try {
    return (db.exportSession(sessionIdFor(key))?.messages ?? []).filter((m) => m.role === 'user').map((m) => ({ id: m.id, content: m.content, timestamp: m.timestamp }));
  } finally {
    db.close();
  }
}

export function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}
