/** The `hermes-fs save` action (loaded on demand). */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { formatSaveSuccess, saveConversation } from '@hermes/cli';
import { openSessionDb, sqliteHint, STATE_DB_FILE } from '@hermes/session-db';
import { formatOf, type RunContext } from '../commands/common.js';
import type { SaveCommandOptions } from '../commands/save.js';
import type { SaveJson } from '../json/save.js';
import { EXIT, type ExitCode, printJson, println, stderrLine } from '../lib/output.js';
import { describeUid } from '../lib/owner-name.js';
import { saveFailed } from '../lib/save-failure.js';
import { termSafe } from '../lib/term.js';

/** Why a save cannot start, with the errno and the path (a SaveError-like shape for the failure line). */
class SaveFailure extends Error {
  override readonly name = 'SaveFailure';
  constructor(
    message: string,
    readonly code: string,
    readonly path: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

const euid = (): number => (typeof process.geteuid === 'function' ? process.geteuid() : -1);

/** The database must exist and be readable by this uid: the real errno, never "missing" for "forbidden". */
function checkDb(file: string): void {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ENOENT') throw new SaveFailure(`no session database at ${file} (ENOENT)`, code, file, 'check --home: the gateway\'s home holds state.db');
    if (code === 'EACCES' || code === 'EPERM') {
      let owner = '';
      try {
        const st = fs.lstatSync(file);
        owner = `, owned by ${describeUid(st.uid)}, mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}`;
      } catch {
        // the directory itself is not searchable
      }
      // session-db's own fix for a uid that cannot open state.db (on a managed home: hermes-fs doctor --fix).
      throw new SaveFailure(`cannot read ${file}: permission denied for uid ${euid()} (${code}${owner})`, code, file, sqliteHint('SQLITE_CANTOPEN', file));
    }
    if (code === 'ELOOP') throw new SaveFailure(`${file} is a symbolic link; state.db is never read through one (ELOOP)`, code, file);
    throw new SaveFailure(`cannot open ${file} (${code})`, code, file);
  }
  try {
    if (!fs.fstatSync(fd).isFile()) throw new SaveFailure(`${file} is not a regular file`, 'ENOTREGULAR', file);
  } finally {
    fs.closeSync(fd);
  }
}

export async function saveAction(ctx: RunContext, opts: SaveCommandOptions): Promise<ExitCode> {
  const format = formatOf(opts.output, opts.format, 'json');
  const dbFile = path.join(ctx.home, STATE_DB_FILE);
  try {
    checkDb(dbFile);
    const db = openSessionDb({ home: ctx.home, readonly: true });
    let exported;
    try {
      exported = db.exportSession(opts.session);
    } finally {
      db.close();
    }
    if (exported === undefined) throw new SaveFailure(`session ${opts.session} not found in ${dbFile}`, 'ENOSESSION', dbFile);
    const result = await saveConversation(exported, {
      home: ctx.home,
      format,
      ...(opts.output === undefined ? {} : { filename: opts.output }),
      redact: opts.redact,
    });
    if (ctx.json) {
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
        warnings: [...result.warnings],
      } satisfies SaveJson);
    } else {
      println(termSafe(formatSaveSuccess(result)));
      for (const w of result.warnings) stderrLine(`warning: ${termSafe(w)}`);
    }
    return EXIT.ok;
  } catch (err) {
    return saveFailed('save', err, { json: ctx.json, debug: ctx.debug });
  }
}
