/** Validating, encoding and inserting one message row. */
import type Database from 'better-sqlite3';
import type { AppendMessageInput } from './types.js';
import {
  coerceEpoch,
  encodeContent,
  encodeToolCalls,
  optionalInteger,
  optionalJsonObject,
  optionalText,
  requiredEpoch,
  requiredText,
} from './values.js';

export interface MessageRow {
  id: number;
  session_id: string;
  role: string;
  content: unknown;
  timestamp: number;
  tool_call_id: string | null;
  tool_calls: string | null;
  tool_name: string | null;
  token_count: number | null;
  finish_reason: string | null;
  platform_message_id: string | null;
  display_kind: string | null;
  display_metadata: string | null;
}

export interface NormalisedMessage {
  sessionId: string;
  role: string;
  content: string | null;
  timestamp: number;
  toolCallId: string | null;
  toolCalls: string | null;
  toolCallCount: number;
  toolName: string | null;
  tokenCount: number | null;
  finishReason: string | null;
  platformMessageId: string | null;
  displayKind: string | null;
  displayMetadata: string | null;
}

export const INSERT_MESSAGE_SQL =
  'INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count, ' +
  'finish_reason, platform_message_id, display_kind, display_metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** Runs {@link INSERT_MESSAGE_SQL} (prepared) for one message. */
export function insertMessage(statement: Database.Statement, m: NormalisedMessage): Database.RunResult {
  return statement.run(
    m.sessionId,
    m.role,
    m.content,
    m.toolCallId,
    m.toolCalls,
    m.toolName,
    m.timestamp,
    m.tokenCount,
    m.finishReason,
    m.platformMessageId,
    m.displayKind,
    m.displayMetadata,
  );
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export type LooseMessage = { readonly [K in keyof AppendMessageInput]?: unknown };

/**
 * Validates and encodes one message. `timestamps: 'strict'` (a caller's own value) refuses anything but epoch
 * seconds; `'coerce'` (a value read from a spool file) replaces an implausible one with now, as the
 * reference's `coerce_epoch` does, so a file is never rejected for its timestamp alone.
 */
export function normaliseMessage(input: LooseMessage, timestamps: 'strict' | 'coerce'): NormalisedMessage {
  const toolCalls = encodeToolCalls(input.toolCalls);
  return {
    sessionId: requiredText('session_id', input.sessionId),
    role: requiredText('role', input.role),
    content: encodeContent(input.content),
    timestamp: timestamps === 'strict' ? requiredEpoch('timestamp', input.timestamp) : coerceEpoch(input.timestamp),
    toolCallId: optionalText('tool_call_id', input.toolCallId),
    toolCalls: toolCalls.text,
    toolCallCount: toolCalls.count,
    toolName: optionalText('tool_name', input.toolName),
    tokenCount: optionalInteger('token_count', input.tokenCount),
    finishReason: optionalText('finish_reason', input.finishReason),
    platformMessageId: optionalText('platform_message_id', input.platformMessageId),
    displayKind: optionalText('display_kind', input.displayKind),
    displayMetadata: optionalJsonObject('display_metadata', input.displayMetadata),
  };
}
