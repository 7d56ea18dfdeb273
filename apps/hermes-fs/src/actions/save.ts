/** The `hermes-fs save` action (loaded on demand). */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { formatSaveFailure, formatSaveSuccess, saveConversation } from '@hermes/cli';
import { openSessionDb, STATE_DB_FILE } from '@hermes/session-db';
import { setExit } from '../commands/common.js';
import type { SaveCommandOptions } from '../commands/save.js';
import { resolveHome } from '../lib/home.js';
import { EXIT, printJson, println } from '../lib/output.js';

class SaveFailure extends Error {
  override readonly name = 'SaveFailure';
}

function hintOf(err: unknown): string | undefined {
  const hint = (err as { hint?: unknown } | null)?.hint;
  return typeof hint === 'string' && hint !== '' ? hint : undefined;
}

export async function saveAction(opts: SaveCommandOptions): Promise<void> {
  const home = resolveHome(opts.home);
  try {
    const dbFile = path.join(home, STATE_DB_FILE);
    if (!fs.existsSync(dbFile)) throw new SaveFailure(`no session database at ${dbFile}`);
    const db = openSessionDb({ home, readonly: true });
    let exported;
    try {
      exported = db.exportSession(opts.session);
    } finally {
      db.close();
    }
    if (exported === undefined) throw new SaveFailure(`session ${opts.session} not found in ${dbFile}`);
    const result = await saveConversation(exported, {
      home,
      ...(opts.format === undefined ? {} : { format: opts.format }),
      ...(opts.output === undefined ? {} : { filename: opts.output }),
      redact: opts.redact,
    });
    if (opts.json) {
      printJson({
        schemaVersion: 1,
        command: 'save',
        ok: true,
        session: opts.session,
        path: result.path,
        format: result.format,
        bytes: result.bytes,
        mode: result.mode.toString(8).padStart(4, '0'),
        redacted: result.redacted,
        messages: exported.messages.length,
        warnings: result.warnings,
      });
    } else {
      println(formatSaveSuccess(result));
      for (const w of result.warnings) process.stderr.write(`warning: ${w}\n`);
    }
    setExit(EXIT.ok);
  } catch (err) {
    const line = formatSaveFailure(err);
    if (opts.json) printJson({ schemaVersion: 1, command: 'save', ok: false, session: opts.session, error: line });
    process.stderr.write(`${line}\n`);
    const hint = hintOf(err);
    if (hint !== undefined) process.stderr.write(`hint: ${hint}\n`);
    if (opts.debug && err instanceof Error && err.stack !== undefined) process.stderr.write(`${err.stack}\n`);
    setExit(EXIT.findings);
  }
}
