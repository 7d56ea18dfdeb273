/**
 * The session store recovery writes through: state.db, plus what this service adds to a spooled message —
 * its session is created when missing, and its idempotency key is recorded with its row in the same
 * transaction (a key already stored makes the file a duplicate: no second row).
 */
import { type RecoveryBatchEntry, type RecoveryCommitOutcome, type SessionStore } from '@hermes/gateway';
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
 * state.db as recovery's store, with this service's sessions and idempotency keys (see the module comment).
 * What a file adds is read from the payload recovery commits — never from a listing taken before the pass: a
 * payload spooled after such a listing (a stop's flush during a drain) would lose its key, and the client's
 * retry of it would be stored a second time.
 */
export function gatewayStore(db: SessionDb): SessionStore {
  const known = new Set<string>();
  return {
    path: db.path,
    wantsPayloads: true,
    hasReceipt: (id) => db.hasReceipt(id),
    committedReceipts: (ids) => db.committedReceipts(ids),
    resolveSessionIdForKey: (key, notAfter) => db.resolveSessionIdForKey(key, notAfter),
    checkpoint: () => db.checkpoint(),
    commitRecovered(entries: readonly RecoveryBatchEntry[]): readonly RecoveryCommitOutcome[] {
      const mapped = entries.map((entry) => {
        const info = spooledInfo(entry.payload);
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
