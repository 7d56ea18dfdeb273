/**
 * Payloads spooled by a gateway service that acknowledges messages (the reference service, `hermes-gateway`)
 * carry more than their text: the state.db session they belong to, which the service creates on first use, and
 * the client's idempotency key. Whoever replays such a spool — the service at start-up or an operator's
 * `hermes-fs pending recover` — must store both, or a client's retry of an acknowledged message is stored twice.
 * {@link serviceSessionStore} is that store, for every recovery.
 */
import type { RecoveryBatchEntry, RecoveryCommitOutcome, SessionStore } from './store.js';

/** `data.via` of a payload a service spooled: its session may be created at recovery, its key is recorded. */
export const SERVICE_SPOOL_MARKER = 'hermes-gateway';
/** The `sessions.source` of the sessions such a service creates. */
export const SERVICE_SESSION_SOURCE = 'gateway';

/** What a service's payload carries beyond its text. */
export interface ServiceSpooledInfo {
  readonly sessionKey: string;
  readonly sessionId: string;
  readonly idempotencyKey: string | undefined;
  /** Epoch seconds: the payload's `ts`. */
  readonly ts: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The service's info in a parsed payload, or undefined for a payload no service marked. */
export function serviceSpooledInfo(payload: unknown): ServiceSpooledInfo | undefined {
  if (!isRecord(payload) || !isRecord(payload.data) || payload.data.via !== SERVICE_SPOOL_MARKER) return undefined;
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

/** One recovered entry with the idempotency key to record with its first row (in the same transaction). */
export type KeyedRecoveryEntry = RecoveryBatchEntry & { readonly idempotency?: { readonly sessionId: string; readonly key: string } };

/**
 * What {@link serviceSessionStore} needs of the database: a {@link SessionStore} that also reads and creates
 * sessions and records idempotency keys (`@hermes/session-db`'s `SessionDb` is one).
 */
export interface ServiceStateDb extends Omit<SessionStore, 'commitRecovered' | 'wantsPayloads'> {
  getSession(id: string): unknown;
  createSession(input: { id: string; source: string; sessionKey: string; startedAt: number }): unknown;
  commitRecovered(entries: readonly KeyedRecoveryEntry[]): readonly RecoveryCommitOutcome[];
}

/**
 * The store a spool is replayed through: `db`, plus what a service's payload adds — its session created when
 * missing, its idempotency key recorded with its row (a key already stored makes the file a duplicate: no
 * second row). Any other payload goes through unchanged. What a file adds is read from the payload recovery
 * commits, never from a listing taken before the pass.
 */
export function serviceSessionStore(db: ServiceStateDb): SessionStore {
  const known = new Set<string>();
  return {
    ...(db.path === undefined ? {} : { path: db.path }),
    wantsPayloads: true,
    hasReceipt: (id) => db.hasReceipt(id),
    ...(db.committedReceipts === undefined ? {} : { committedReceipts: db.committedReceipts.bind(db) }),
    ...(db.resolveSessionIdForKey === undefined ? {} : { resolveSessionIdForKey: db.resolveSessionIdForKey.bind(db) }),
    ...(db.checkpoint === undefined ? {} : { checkpoint: db.checkpoint.bind(db) }),
    commitRecovered(entries: readonly RecoveryBatchEntry[]): readonly RecoveryCommitOutcome[] {
      const mapped = entries.map((entry): KeyedRecoveryEntry => {
        const info = serviceSpooledInfo(entry.payload);
        if (info === undefined) return entry;
        if (!known.has(info.sessionId)) {
          if (db.getSession(info.sessionId) === undefined) {
            db.createSession({ id: info.sessionId, source: SERVICE_SESSION_SOURCE, sessionKey: info.sessionKey, startedAt: info.ts });
          }
          known.add(info.sessionId);
        }
        return info.idempotencyKey === undefined ? entry : { ...entry, idempotency: { sessionId: info.sessionId, key: info.idempotencyKey } };
      });
      return db.commitRecovered(mapped);
    },
  };
}
