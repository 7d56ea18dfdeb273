/** Session keys (the URL's `:key`) and the state.db session each one maps to. */
import { createHash } from 'node:crypto';
import { SERVICE_SESSION_SOURCE, SERVICE_SPOOL_MARKER } from '@hermes/gateway';

/** The `sessions.source` of every session this service creates. */
export const SESSION_SOURCE = SERVICE_SESSION_SOURCE;
/** Marker in spooled payloads (`data.via`): this service wrote them and may create their session at recovery. */
export const SPOOL_MARKER = SERVICE_SPOOL_MARKER;
export const MAX_KEY_LENGTH = 256;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;

/** The state.db session id of a session key: `gw-` + 32 hex of its sha256, the same in every process. */
export function sessionIdFor(sessionKey: string): string {
  return `gw-${createHash('sha256').update(sessionKey, 'utf8').digest('hex').slice(0, 32)}`;
}

/** Why `key` cannot be a session key (1–256 characters, no control characters), or undefined. */
export function keyProblem(key: string, what = 'session key', max = MAX_KEY_LENGTH): string | undefined {
  if (key.length === 0) return `the ${what} is empty`;
  if (key.length > max) return `the ${what} is ${String(key.length)} characters long (at most ${String(max)})`;
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(key)) return `the ${what} holds a control character`;
  return undefined;
}

/** Epoch seconds that never go backwards and never repeat in this process (per-session order survives ties). */
export function monotonicClock(now: () => number = () => Date.now() / 1000): () => number {
  let last = 0;
  return () => {
    const t = Math.max(now(), last + 0.000001);
    last = t;
    return t;
  };
}
