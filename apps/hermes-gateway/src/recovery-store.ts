/**
 * The session store recovery writes through: state.db as @hermes/gateway's service store — the sessions of this
 * service's payloads created when missing, their idempotency keys recorded with their rows (the same store
 * `hermes-fs pending recover` uses on this service's home).
 */
import { serviceSessionStore, type SessionStore } from '@hermes/gateway';
import type { SessionDb } from '@hermes/session-db';

/** state.db as recovery's store (see the module comment). */
export function gatewayStore(db: SessionDb): SessionStore {
  return serviceSessionStore(db);
}
