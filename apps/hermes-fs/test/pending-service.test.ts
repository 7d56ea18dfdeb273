/**
 * `hermes-fs pending recover` on a gateway service's home replays the spool as the service would: a payload the
 * service spooled gets its session (created when state.db has none) and its idempotency key recorded with its
 * row. Without the key, a client that never saw its acknowledgement (the service stopped) and retries after an
 * operator's recovery is stored twice.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { flushOverflow, SERVICE_SPOOL_MARKER } from '@hermes/gateway';
import { openSessionDb } from '@hermes/session-db';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupHomes, cliJson, freshHome } from './helpers.js';

afterAll(cleanupHomes);

interface RecoverJson {
  readonly ok: boolean;
  readonly createdDb: boolean;
  readonly report: { scanned: number; counts: { inserted: number; rows: number; alreadyCommitted: number }; kept: { reason: string }[] } | null;
}

const SESSION = 'gw-0123456789abcdef0123456789abcdef';

/** Spools two user messages of one session as the service does: its marker, the state.db session, the keys. */
async function spoolAsService(home: string): Promise<void> {
  const events = [
    { text: 'hello', timestamp: 1_700_000_000, session_id: SESSION, via: SERVICE_SPOOL_MARKER, idempotency_key: 'k-1' },
    { text: 'again', timestamp: 1_700_000_001, session_id: SESSION, via: SERVICE_SPOOL_MARKER, idempotency_key: 'k-2' },
  ];
  const report = await flushOverflow(new Map([['alice', events]]), { home, reason: 'db-unavailable' });
  expect([report.written.length, report.durable]).toEqual([2, true]);
}

describe("hermes-fs pending recover on a gateway service's home", () => {
  it("creates the payloads' session and records their idempotency keys: the clients' retries are duplicates, one row each", async () => {
    const home = freshHome();
    fs.mkdirSync(home, { mode: 0o700 });
    await spoolAsService(home);

    const { run, json } = cliJson<RecoverJson>(['pending', 'recover', '--create-db', '--home', home]);
    expect(run.status, run.stderr).toBe(0);
    expect(json.report?.counts).toEqual({ inserted: 2, rows: 2, alreadyCommitted: 0, duplicates: 0 });
    expect(json.report?.kept).toEqual([]);
    expect(fs.readdirSync(path.join(home, 'pending_messages'))).toEqual([]);

    const db = openSessionDb({ home });
    try {
      expect(db.getSession(SESSION)?.source).toBe('gateway');
      // The service stopped before its 202s reached the clients; they send again with the same keys.
      const retried = db.appendMessages([
        { sessionId: SESSION, role: 'user', content: 'hello', timestamp: 1_700_000_010, idempotencyKey: 'k-1' },
        { sessionId: SESSION, role: 'user', content: 'again', timestamp: 1_700_000_011, idempotencyKey: 'k-2' },
      ]);
      expect(retried.map((r) => r.status)).toEqual(['duplicate', 'duplicate']);
      const texts = (db.exportSession(SESSION)?.messages ?? []).map((m) => String(m.content));
      expect(texts).toEqual(['hello', 'again']);
    } finally {
      db.close();
    }
  });
});
