import { describeValue, GatewayInputError } from './errors.js';
import { isRecord } from './payload.js';

/**
 * One entry of an agent-history snapshot, ready for an exporter (`hermes-fs pending export`, `/save`
 * renderers): always a `role` and, for what was not a message object, the entry as `content`.
 */
export interface AgentHistoryMessage {
  readonly role: string;
  readonly content?: unknown;
  /**
   * What the entry was in the snapshot: `message` (an object; its fields as they were, `role` defaulting to
   * `unknown`), `text` (a string — the reference writes `str(obj)` for SDK message objects, and so may any
   * writer — kept as `content`), or `value` (a number, boolean, null or list, kept as its JSON text in `content`).
   */
  readonly origin: 'message' | 'text' | 'value';
  readonly [field: string]: unknown;
}

/**
 * The `messages` of an agent-history snapshot payload, every entry exported as what it is: an object stays
 * the message it is (`role` `unknown` when it has none), a string is a text entry, anything else its JSON
 * text. Nothing is dropped and nothing fails for one odd entry. Throws `GatewayInputError` (`EINVALID_INPUT`)
 * only when the payload has no `messages` list at all.
 */
export function agentHistoryMessages(payload: unknown): AgentHistoryMessage[] {
  const messages = isRecord(payload) ? payload.messages : undefined;
  if (!Array.isArray(messages)) {
    throw new GatewayInputError(
      'EINVALID_INPUT',
      'messages',
      `an agent-history snapshot has a messages list; this one has ${isRecord(payload) ? describeValue(messages) : `no object but ${describeValue(payload)}`}`,
    );
  }
  return messages.map((m: unknown): AgentHistoryMessage => {
    if (isRecord(m)) {
      const role = m.role;
      return { ...m, role: typeof role === 'string' && role !== '' ? role : 'unknown', origin: 'message' };
    }
    if (typeof m === 'string') return { role: 'unknown', content: m, origin: 'text' };
    let json: unknown;
    try {
      json = JSON.stringify(m);
    } catch {
      json = undefined;
    }
    const text = typeof json === 'string' ? json : String(m);
    return { role: 'unknown', content: text, origin: 'value' };
  });
}
