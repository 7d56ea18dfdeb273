/**
 * The gateway's round-3 audit, rows 1 and 6, from the operator's side: `pending list` called a spool holding only
 * what killed writers left (temps, `.partial` files) "empty"; batch files are one entry each; a file nested too
 * deeply to parse is its own `too-deep` entry while the other files list, show and validate as usual.
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { Ajv } from 'ajv';
import { serializeBatch } from '@hermes/gateway';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupHomes, cli, cliJson, freshHome } from './helpers.js';

afterAll(cleanupHomes);

const require = createRequire(import.meta.url);
const ajv = new Ajv({ allErrors: true, strict: true });
const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
function validates(schema: string, doc: unknown): void {
  const validate = compiled.get(schema) ?? ajv.compile(JSON.parse(fs.readFileSync(require.resolve(`hermes-fs/schema/${schema}.schema.json`), 'utf8')) as object);
  compiled.set(schema, validate);
  expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
}

interface Entry {
  name: string;
  kind: string;
  problem: string | null;
  members: number | null;
  target: string | null;
  detail: string | null;
}
interface ListJson {
  entries: Entry[];
  totals: { files: number; toDeliver: number; toAdopt: number; batchMembers: number; kinds: Record<string, number>; problems: Record<string, number> };
}

const hex = (n: number): string => n.toString(16).padStart(32, '0');
const payload = (n: number, text: string): string =>
  `${JSON.stringify({ schema_version: 1, kind: 'pending', ts: 1700000000 + n, seq: n, pid: 4194305, process_id: '0123456789abcdef', session_key: `agent:main:telegram:dm:${String(n)}`, reason: 'shutdown', data: { text } }, null, 2)}\n`;

function spool(home: string): string {
  const dir = path.join(home, 'pending_messages');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

describe('row 1: pending list shows what killed writers left', () => {
  it('a spool holding only temps and .partial files is not "empty": each is listed and counted', () => {
    const home = freshHome();
    const dir = spool(home);
    // A complete payload under its temp name (killed between fsync and rename), a temp cut short, a .partial file.
    fs.writeFileSync(path.join(dir, `.pending-${hex(1)}.json.4194305.0123456789ab.tmp`), payload(1, 'complete under a temp name'), { mode: 0o600 });
    fs.writeFileSync(path.join(dir, `.pending-${hex(2)}.json.4194305.0123456789ac.tmp`), payload(2, 'cut short').slice(0, 40), { mode: 0o600 });
    fs.writeFileSync(path.join(dir, `pending-${hex(3)}.json.4194305.0123456789ad.tmp.partial`), '{"schema_', { mode: 0o600 });
    const text = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1', COLUMNS: '220' } });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).not.toContain('is empty');
    expect(text.stdout).toContain('would be adopted by recovery: complete under a temp name');
    expect(text.stdout.match(/partial: incomplete, holds no complete message/g)).toHaveLength(2);
    expect(text.stdout).toContain(`3 files in ${dir}: 0 to deliver, 1 under temp names (recovery adopts them), 2 partial (incomplete writes), 0 agent-history snapshots, 0 .bad`);
    const { run, json } = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(run.status, run.stderr).toBe(0);
    validates('pending-list', json);
    const rows = json.entries.map((e) => [e.name, e.kind, e.target, e.problem]).sort();
    console.log(`row 1 list: a spool of temps only lists ${String(json.entries.length)} entries (${rows.map((r) => String(r[1])).join(', ')}), toAdopt ${String(json.totals.toAdopt)}`);
    expect(rows).toEqual([
      [`.pending-${hex(1)}.json.4194305.0123456789ab.tmp`, 'temp', `pending-${hex(1)}.json`, null],
      [`.pending-${hex(2)}.json.4194305.0123456789ac.tmp`, 'partial', `pending-${hex(2)}.json`, null],
      [`pending-${hex(3)}.json.4194305.0123456789ad.tmp.partial`, 'partial', `pending-${hex(3)}.json`, null],
    ]);
    expect(json.totals).toMatchObject({ files: 3, toDeliver: 0, toAdopt: 1, batchMembers: 0, kinds: { temp: 1, partial: 2, batch: 0 } });
    // show works on a temp too, and says what recovery does with it.
    const shown = cli(['pending', 'show', `.pending-${hex(1)}.json.4194305.0123456789ab.tmp`, '--home', home], { env: { NO_COLOR: '1' } });
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`detail   a complete payload under a temp name: recovery adopts it as pending-${hex(1)}.json`);
  });

  it('a batch file is one entry of kind batch with its member count', () => {
    const home = freshHome();
    const dir = spool(home);
    const members = [1, 2, 3].map((n) => ({ name: `pending-${hex(n)}.json`, text: payload(n, `member ${String(n)}`) }));
    fs.writeFileSync(path.join(dir, `batch-${hex(9)}.json`), serializeBatch(members, 1700000009), { mode: 0o600 });
    fs.writeFileSync(path.join(dir, `pending-${hex(4)}.json`), payload(4, 'a file of its own'), { mode: 0o600 });
    const { json } = cliJson<ListJson>(['pending', 'list', '--home', home]);
    validates('pending-list', json);
    expect(json.entries.map((e) => [e.name, e.kind, e.members]).sort()).toEqual([
      [`batch-${hex(9)}.json`, 'batch', 3],
      [`pending-${hex(4)}.json`, 'pending', null],
    ]);
    expect(json.totals).toMatchObject({ files: 2, toDeliver: 1, batchMembers: 3, kinds: { batch: 1 } });
    const text = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1', COLUMNS: '220' } });
    expect(text.stdout).toContain('batch of 3 payloads');
    expect(text.stdout).toContain('1 batch file (3 payloads)');
    // Recovery counts messages, not files: the batch's members are messages of their own (their sessions do not
    // resolve in a new state.db, so none is inserted; the members are written out as files of their own).
    const rec = cli(['pending', 'recover', '--create-db', '--home', home], { env: { NO_COLOR: '1' } });
    expect(rec.stdout).toContain(`recovered 0 of 4 messages (3 messages in 1 batch file) into ${path.join(home, 'state.db')}\n`);
  });
});

describe('row 6: a too-deep file is its own entry', () => {
  const DEEP = 100_000;
  it('one too-deep entry in list, list --json and show; the other files list fine', () => {
    const home = freshHome();
    const dir = spool(home);
    fs.writeFileSync(path.join(dir, `pending-${hex(1)}.json`), payload(1, 'first'), { mode: 0o600 });
    fs.writeFileSync(path.join(dir, `pending-${hex(2)}.json`), payload(2, 'second'), { mode: 0o600 });
    fs.writeFileSync(path.join(dir, `pending-${hex(3)}.json`), `{"session_key":"k","ts":1700000003,"data":${'['.repeat(DEEP)}NaN${']'.repeat(DEEP)}}`, { mode: 0o600 });
    const { run, json } = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(run.status, run.stderr).toBe(0);
    validates('pending-list', json);
    const problems = json.entries.map((e) => [e.name, e.problem]).sort();
    console.log(`row 6 list: ${String(json.entries.length)} entries, problems ${JSON.stringify(problems.map((p) => p[1]))}`);
    expect(problems).toEqual([
      [`pending-${hex(1)}.json`, null],
      [`pending-${hex(2)}.json`, null],
      [`pending-${hex(3)}.json`, 'too-deep'],
    ]);
    expect(json.entries.find((e) => e.problem === 'too-deep')?.detail).toMatch(/^nested deeper than 512 levels at position \d+$/);
    expect(json.totals).toMatchObject({ files: 3, toDeliver: 2, problems: { 'too-deep': 1, unparseable: 0 } });
    const text = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1', COLUMNS: '220' } });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain('nested too deeply to parse (see pending show)');
    expect(text.stdout).toContain('1 too deep to parse');
    const shown = cliJson<{ entry: Entry; payload: unknown; raw: string | null }>(['pending', 'show', hex(3), '--home', home]);
    expect(shown.run.status, shown.run.stderr).toBe(0);
    validates('pending-show', shown.json);
    expect(shown.json.entry.problem).toBe('too-deep');
    expect(shown.json.payload).toBeNull();
    expect(shown.json.raw?.startsWith('{"session_key":"k","ts":1700000003,"data":[[[')).toBe(true);
    const plain = cli(['pending', 'show', hex(3), '--home', home], { env: { NO_COLOR: '1' } });
    expect(plain.stdout).toContain('kind     too-deep');
  });
});
