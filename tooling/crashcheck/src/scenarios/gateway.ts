/** The gateway's shutdown flush (sync and async), into an existing spool and into one it has to create. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { silentLogger, TEMP_FILE_PATTERN } from '@hermes/fs-policy';
import * as gateway from '@hermes/gateway';
import { type FlushReport, flushPending, flushPendingSync, PENDING_FILE_PATTERN } from '@hermes/gateway';
import type { Scenario } from '../scenario.js';
import { envFor, filler, FSYNC_MUTATIONS, HOME, namesIn, readState, strangers } from './util.js';

export const SPOOL = `${HOME}/pending_messages`;

/** Three pending messages; the second is over a block long. */
export const MESSAGES: Readonly<Record<string, string>> = {
  'telegram:100': 'see you tomorrow',
  'telegram:200': filler('long message', 5000),
  'discord:300': 'the third one',
};

export interface WrittenMark {
  readonly rel: string;
  readonly sessionKey: string;
}

interface Payload {
  readonly session_key?: unknown;
  readonly data?: { readonly text?: unknown };
}

function parse(data: Buffer): Payload | undefined {
  try {
    const v = JSON.parse(data.toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null ? (v) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether recovery adopts complete temp payloads (the stop contract's salvage): then a complete temp holds its
 * message as surely as the final name does.
 */
export const RECOVERY_SALVAGES_TEMPS = typeof (gateway as Record<string, unknown>).salvageTemps === 'function';

/**
 * The flush's promise on one state: every `*.json` payload under its final name is complete (a torn one would
 * be kept as unparseable, its message lost), and once the flush returned, every message its report called
 * written is in a complete payload under its final name (or, when recovery salvages temps, in a complete temp).
 */
export function checkSpool(dir: string, written: readonly WrittenMark[] | undefined): string[] {
  const out: string[] = [];
  for (const name of namesIn(dir, SPOOL)) {
    if (!name.endsWith('.json')) continue;
    const seen = readState(dir, `${SPOOL}/${name}`);
    const p = seen === undefined ? undefined : parse(seen.data);
    const key = p?.session_key;
    if (typeof key !== 'string' || p?.data?.text !== MESSAGES[key]) {
      out.push(`${SPOOL}/${name} is not a complete payload (${String(seen?.data.length ?? 0)} bytes): recovery would keep it as unparseable`);
    }
  }
  const inTemp = (key: string): boolean =>
    RECOVERY_SALVAGES_TEMPS &&
    namesIn(dir, SPOOL).some((n) => {
      if (!TEMP_FILE_PATTERN.test(n)) return false;
      const seen = readState(dir, `${SPOOL}/${n}`);
      const p = seen === undefined ? undefined : parse(seen.data);
      return p?.session_key === key && p.data?.text === MESSAGES[key];
    });
  for (const w of written ?? []) {
    const seen = readState(dir, w.rel);
    const p = seen === undefined ? undefined : parse(seen.data);
    if (p?.data?.text === MESSAGES[w.sessionKey] || inTemp(w.sessionKey)) continue;
    if (seen === undefined) out.push(`the message of ${w.sessionKey} was reported written but ${w.rel} does not exist`);
    else out.push(`the message of ${w.sessionKey} was reported written but ${w.rel} does not hold it`);
  }
  const others = strangers(dir, SPOOL, (n) => PENDING_FILE_PATTERN.test(n));
  if (others.length > 0) out.push(`unexpected entries in the spool: ${others.join(', ')}`);
  return out;
}

function flushScenario(form: 'sync' | 'async', spoolExists: boolean): Scenario {
  return {
    protocol: spoolExists ? 'gateway flushPending' : 'gateway flushPending (first flush: creates the spool)',
    form,
    promise: 'every message the report says written is in a complete payload under its final name; no torn payload under a final name',
    setup(root) {
      fs.mkdirSync(path.join(root, HOME), { mode: 0o700 });
      if (spoolExists) fs.mkdirSync(path.join(root, SPOOL), { mode: 0o700 });
    },
    async run(root, rec) {
      const options = { home: path.join(root, HOME), env: envFor(root), logger: silentLogger, now: () => 1_767_225_600 };
      const report: FlushReport = form === 'sync' ? flushPendingSync(MESSAGES, options) : await flushPending(MESSAGES, options);
      if (report.failed.length > 0) throw new Error(`the flush failed: ${report.failed.map((f) => f.line).join('; ')}`);
      if (!report.durable) throw new Error('the flush reported durable: false');
      const written: WrittenMark[] = report.written.map((w) => ({ rel: path.relative(root, w.path), sessionKey: w.sessionKey ?? '' }));
      rec.mark(`flush returned: ${String(written.length)} written`, written);
    },
    check({ dir, state }) {
      const mark = state.marks[state.marks.length - 1];
      return checkSpool(dir, mark?.data as WrittenMark[] | undefined);
    },
    mutations: FSYNC_MUTATIONS,
  };
}

export function gatewayFlushScenarios(): Scenario[] {
  return [flushScenario('sync', true), flushScenario('async', true), flushScenario('sync', false), flushScenario('async', false)];
}
