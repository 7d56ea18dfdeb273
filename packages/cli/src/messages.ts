import { SaveError } from './errors.js';
import type { SaveFormat, SaveResult } from './types.js';

const FORMAT_NAMES: Readonly<Record<SaveFormat, string>> = { json: 'JSON', md: 'Markdown', html: 'HTML' };

/**
 * The operator CLI's failure line: exactly `(x_x) Failed to save: <reason>` (the reference's wording). Any
 * thrown value is accepted; a non-SaveError contributes its message.
 */
export function formatSaveFailure(err: unknown): string {
  let reason: string;
  if (err instanceof SaveError) reason = err.reason;
  else if (err instanceof Error) reason = err.message;
  else reason = String(err);
  return `(x_x) Failed to save: ${reason}`;
}

/** The operator CLI's success line: `(^_^)v Conversation saved to: <path> (JSON|Markdown|HTML)`. */
export function formatSaveSuccess(result: Pick<SaveResult, 'path' | 'format'>): string {
  return `(^_^)v Conversation saved to: ${result.path} (${FORMAT_NAMES[result.format]})`;
}
