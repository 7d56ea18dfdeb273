/**
 * The session store recovery writes through: state.db, plus what this service adds to a spooled message —
 * its session is created when missing, and its idempotency key is recorded with its row in the same
 * transaction (a key already stored makes the file a duplicate: no second row).
 */
import * as path from 'node:path';
import { listSpool, readSpoolFile, type RecoveryBatchEntry, type RecoveryCommitOutcome, type SessionStore } from '@hermes/gateway';
import type { SessionDb } from '@hermes/session-db';
import { SESSION_SOURCE, SPOOL_MARKER } from './ids.js';

/** What a payload of this service carries beyond its text. */
export interface SpooledInfo {
  readonly sessionKey: string;
  readonly sessionId: string;
  readonly idempotencyKey: string | undefined;
  readonly ts: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The info of one payload this service wrote, or undefined for any other payload. */
export function spooledInfo(payload: unknown): SpooledInfo | undefined {
  if (!isRecord(payload) || !isRecord(payload.data) || payload.data.via !== SPOOL_MARKER) return undefined;
  const { session_id: sessionId, idempotency_key: key } = payload.data;
  const sessionKey = payload.session_key;
  if (typeof sessionId !== 'string' || typeof sessionKey !== 'string') return undefined;
  return {
    sessionKey,
    sessionId,
    idempotencyKey: typeof key === 'string' ? key : undefined,
    ts: typeof payload.ts === 'number' ? payload.ts : Date.now() / 1000,
  };
}

/**
 * Reads every pending/overflow payload of the spool (and the members of batch files) and returns this
 * service's by payload name — the name recovery commits them under. Read-only, through @hermes/gateway.
 */
export function scanSpooled(home: string): Map<string, SpooledInfo> {
  const found = new Map<string, SpooledInfo>();
  for (const entry of listSpool({ home, includeBad: false })) {
    if (entry.kind !== 'pending' && entry.kind !== 'overflow' && entry.kind !== 'batch' && entry.kind !== 'temp') continue;
    const file = readSpoolFile(entry.path);
    if (file === undefined) continue;
    const payload: unknown = file.payload;
    if (isRecord(payload) && payload.kind === 'batch' && Array.isArray(payload.payloads)) {
      for (const m of payload.payloads as unknown[]) {
        if (!isRecord(m) || typeof m.name !== 'string' || typeof m.text !== 'string') continue;
        let inner: unknown;
        try {
          inner = JSON.parse(m.text);
        } catch {
          continue;
        }
        const info = spooledInfo(inner);
        if (info !== undefined) found.set(m.name, info);
      }
      continue;
    }
    const info = spooledInfo(payload);
    if (info !== undefined) found.set(entry.target ?? path.basename(entry.path), info);
  }
  return found;
}

/** state.db as recovery's store, with this service's sessions and idempotency keys (see the module comment). */
export function gatewayStore(db: SessionDb, spooled: ReadonlyMap<string, SpooledInfo>): SessionStore {
  const known = new Set<string>();
  return {
    path: db.path,
    hasReceipt: (id) => db.hasReceipt(id),
    committedReceipts: (ids) => db.committedReceipts(ids),
    resolveSessionIdForKey: (key, notAfter) => db.resolveSessionIdForKey(key, notAfter),
    checkpoint: () => db.checkpoint(),
    commitRecovered(entries: readonly RecoveryBatchEntry[]): readonly RecoveryCommitOutcome[] {
      const mapped = entries.map((entry) => {
        const info = spooled.get(entry.fileName);
        if (info === undefined) return entry;
        if (!known.has(info.sessionId)) {
          if (db.getSession(info.sessionId) === undefined) {
            db.createSession({ id: info.sessionId, source: SESSION_SOURCE, sessionKey: info.sessionKey, startedAt: info.ts });
          }
          known.add(info.sessionId);
        }
        return info.idempotencyKey === undefined ? entry : { ...entry, idempotency: { sessionId: info.sessionId, key: info.idempotencyKey } };
      });
      return db.commitRecovered(mapped);
    },
  };
}
