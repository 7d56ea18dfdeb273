/**
 * Shared by the stop-deadline (row 4) and temp-after-stop (row 8) tests: a child holding N messages, stopped by a
 * signal or by process.exit(), and what the spool holds afterwards — read independently of the code under test:
 * final-name files, members of batch files (parseBatch), temps (fs-policy's parseTempName), messages counted
 * once by their payload identity (process_id, pid, seq).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTempName } from '@hermes/fs-policy';
import { spawnNode } from '@hermes/test-utils';
import { isBatchName, parseBatch } from '../src/batch.js';
import { fixture, spoolDir } from './helpers.js';

export interface StopRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** From the signal to the child's exit, as a process manager sees it. */
  stopMs: number;
  /** The hook's own figures (`STOP {…}` on stdout), when it printed them. */
  hook: { elapsedMs: number; messages: number; written: number; complete: boolean; inBatch?: number } | undefined;
  last: string;
}

/** Starts fixtures/row4-stop.mjs, sends SIGTERM once it is READY, resolves when it is gone. */
export function stopChild(home: string, mode: 'signal' | 'exit' | 'exit-during', n: number, budgetMs: number, delayMs = 50): Promise<StopRun> {
  return new Promise<StopRun>((resolve, reject) => {
    const child = spawnNode(fixture('row4-stop.mjs'), [mode, String(n), String(budgetMs), String(delayMs)], { umask: 0o022, env: { HERMES_HOME: home } });
    let stdout = '';
    let stderr = '';
    let t0 = 0;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child did not finish in 300 s; stderr=${stderr.slice(-2000)}`));
    }, 300_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (t0 === 0 && stdout.includes('READY\n')) {
        t0 = Date.now();
        child.kill('SIGTERM');
      }
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stopMs = Date.now() - t0;
      const line = stdout.split('\n').find((l) => l.startsWith('STOP '));
      const lines = stderr.split('\n').filter((l) => l.trim() !== '');
      resolve({
        code,
        signal,
        stopMs,
        hook: line === undefined ? undefined : (JSON.parse(line.slice(5)) as StopRun['hook']),
        last: lines[lines.length - 1] ?? '',
      });
    });
  });
}

export interface SpoolCount {
  /** Final-name payload files. */
  files: number;
  batches: number;
  members: number;
  /** Distinct messages (files + members, counted once by process_id/pid/seq). */
  unique: number;
  /** Distinct message texts. */
  texts: Set<string>;
  /** Temp files (fs-policy's names) left in the spool. */
  temps: number;
}

function identity(text: string): { id: string; text: string | undefined } {
  const p = JSON.parse(text) as { process_id?: unknown; pid?: unknown; seq?: unknown; data?: { text?: unknown } };
  return { id: `${String(p.process_id)}/${String(p.pid)}/${String(p.seq)}`, text: typeof p.data?.text === 'string' ? p.data.text : undefined };
}

/** What the spool of `home` holds. */
export function countSpool(home: string): SpoolCount {
  const dir = spoolDir(home);
  const out: SpoolCount = { files: 0, batches: 0, members: 0, unique: 0, texts: new Set(), temps: 0 };
  const ids = new Set<string>();
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return out;
  }
  const add = (text: string): void => {
    const { id, text: t } = identity(text);
    ids.add(id);
    if (t !== undefined) out.texts.add(t);
  };
  for (const name of names) {
    if (parseTempName(name) !== null) {
      out.temps++;
      continue;
    }
    if (!name.endsWith('.json')) continue;
    const text = fs.readFileSync(path.join(dir, name), 'utf8');
    if (isBatchName(name)) {
      const parsed = parseBatch(JSON.parse(text) as unknown);
      if (parsed.batch === undefined) throw new Error(`${name}: ${parsed.problem}`);
      out.batches++;
      for (const m of parsed.batch.payloads) {
        out.members++;
        add(m.text);
      }
      continue;
    }
    out.files++;
    add(text);
  }
  out.unique = ids.size;
  return out;
}
