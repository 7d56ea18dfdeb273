import { SaveError } from './errors.js';
import type { NormalizedSnapshot, SaveInput, SnapshotMessage } from './types.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The fields of the export shape that are checked and placed; any other field is carried as it is. */
const SNAPSHOT_KEYS: ReadonlySet<string> = new Set(['id', 'model', 'started_at', 'title', 'source', 'messages']);

function invalid(reason: string): SaveError {
  return new SaveError({ code: 'EINVALID_INPUT', reason });
}

function optionalText(record: Record<string, unknown>, key: string): string | null | undefined {
  const value = record[key];
  if (value === undefined || value === null || typeof value === 'string') return value;
  throw invalid(`conversation field "${key}" must be a string or null, not ${typeof value}`);
}

function checkMessages(value: unknown): readonly SnapshotMessage[] {
  if (!Array.isArray(value)) throw invalid('conversation has no "messages" array');
  value.forEach((message: unknown, index) => {
    if (!isRecord(message)) throw invalid(`message ${index} is not an object`);
    if (typeof message.role !== 'string') throw invalid(`message ${index} has no string "role"`);
  });
  return value as readonly SnapshotMessage[];
}

/**
 * Brings either input form into the export shape (`id`, `model`, `started_at`, optional `title`/`source`,
 * any other field of a snapshot, `messages`), in that key order. Messages are carried as they are (every
 * field kept).
 */
export function normalizeInput(input: SaveInput): NormalizedSnapshot {
  const raw: unknown = input;
  if (!isRecord(raw)) throw invalid('conversation must be an object');
  const messages = checkMessages(raw.messages);
  const model = optionalText(raw, 'model') ?? null;

  if ('id' in raw || 'started_at' in raw) {
    const id = raw.id;
    if (typeof id !== 'string') throw invalid('conversation snapshot has no string "id"');
    const started = raw.started_at;
    if (started !== null && started !== undefined && (typeof started !== 'number' || !Number.isFinite(started))) {
      throw invalid('"started_at" must be epoch seconds (a finite number) or null');
    }
    const title = optionalText(raw, 'title');
    const source = optionalText(raw, 'source');
    // The export's key order: id, model, started_at, title, source, any other field of the session (such
    // as session-db's ended_at, end_reason, message_count) as given, messages last.
    const out: Record<string, unknown> = { id, model, started_at: started ?? null };
    if (title !== undefined) out.title = title;
    if (source !== undefined) out.source = source;
    for (const [key, value] of Object.entries(raw)) {
      // defineProperty, so a `__proto__` field stays a plain field.
      if (!SNAPSHOT_KEYS.has(key)) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    }
    out.messages = messages;
    return out as unknown as NormalizedSnapshot;
  }

  const startedAt = raw.startedAt;
  if (startedAt !== undefined && !(startedAt instanceof Date && Number.isFinite(startedAt.getTime()))) {
    throw invalid('"startedAt" must be a valid Date');
  }
  const sessionId = optionalText(raw, 'sessionId') ?? null;
  return {
    id: sessionId,
    model,
    started_at: startedAt === undefined ? null : startedAt.getTime() / 1000,
    messages,
  };
}

/**
 * The empty-conversation rule: a snapshot with no message other than system prompts holds no conversation
 * and is refused (the reference refuses an empty history; it still exported a stored session with zero
 * messages, which this closes).
 */
export function assertNotEmpty(snapshot: NormalizedSnapshot): void {
  if (!snapshot.messages.some((m) => m.role !== 'system')) {
    throw new SaveError({
      code: 'EEMPTY',
      reason:
        snapshot.messages.length === 0
          ? 'no conversation to save (there are no messages yet)'
          : 'no conversation to save (only the system prompt so far)',
    });
  }
}

/**
 * Serialises the snapshot as the JSON format writes it (2-space indent, trailing newline). A value JSON
 * cannot hold (BigInt, a circular reference, a throwing toJSON) fails here, before any I/O.
 */
export function serializeSnapshot(snapshot: NormalizedSnapshot): string {
  try {
    return `${JSON.stringify(snapshot, null, 2)}\n`;
  } catch (err) {
    throw new SaveError({
      code: 'ESERIALIZE',
      reason: `the conversation cannot be serialised: ${err instanceof Error ? err.message : String(err)}`,
      cause: err,
    });
  }
}
