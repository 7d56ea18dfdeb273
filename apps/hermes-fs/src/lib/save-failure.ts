import { formatSaveFailure } from '@hermes/cli';
import { EXIT, type ExitCode, printJson, stderrLine } from './output.js';
import { termSafe } from './term.js';

function stringField(err: unknown, key: string): string | undefined {
  const v = (err as Record<string, unknown> | null)?.[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * A failed save or export: `(x_x) Failed to save: <reason>` and the hint on stderr, the error document on
 * stdout with --json, exit 1 (the command ran; the snapshot could not be written).
 */
export function saveFailed(command: string, err: unknown, options: { json: boolean; debug: boolean }): ExitCode {
  const line = formatSaveFailure(err);
  const hint = stringField(err, 'hint');
  stderrLine(termSafe(line));
  if (hint !== undefined) stderrLine(`hint: ${termSafe(hint)}`);
  if (options.debug && err instanceof Error && err.stack !== undefined) stderrLine(err.stack);
  if (options.json) {
    printJson({
      schemaVersion: 1,
      command,
      ok: false,
      exitCode: EXIT.findings,
      error: { code: stringField(err, 'code') ?? 'ESAVE', message: line, path: stringField(err, 'path') ?? null, hint: hint ?? null },
    });
  }
  return EXIT.findings;
}
