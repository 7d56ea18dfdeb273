import * as fs from 'node:fs';
import * as path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { createTestUsers, describeNeeds, runNode, type TestUsers } from '@hermes/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cli, cleanupHomes, freshHome } from './helpers.js';

afterAll(cleanupHomes);

/** Every command that reads a home, with the arguments it needs to get that far. */
const HOME_COMMANDS: readonly { readonly name: string; readonly args: readonly string[]; readonly schema: string }[] = [
  { name: 'doctor', args: ['doctor'], schema: 'doctor' },
  { name: 'pending list', args: ['pending', 'list'], schema: 'pending-list' },
  { name: 'pending show', args: ['pending', 'show', 'abcd1234'], schema: 'pending-show' },
  { name: 'pending recover', args: ['pending', 'recover'], schema: 'pending-recover' },
  { name: 'pending export', args: ['pending', 'export', 'abcd1234'], schema: 'pending-export' },
  { name: 'pending prune', args: ['pending', 'prune'], schema: 'pending-prune' },
  { name: 'save', args: ['save', '--session', 's1'], schema: 'save' },
];

interface ErrorDoc {
  readonly schemaVersion: number;
  readonly command: string;
  readonly ok: boolean;
  readonly exitCode: number;
  readonly error: { readonly code: string; readonly message: string; readonly path: string | null; readonly hint: string | null };
}

const ajv = new Ajv({ allErrors: true, strict: true });
const validators = new Map<string, ValidateFunction>();

function validatorFor(schema: string): ValidateFunction {
  let v = validators.get(schema);
  if (v === undefined) {
    const doc = JSON.parse(fs.readFileSync(new URL(`../schema/${schema}.schema.json`, import.meta.url), 'utf8')) as object;
    v = ajv.compile(doc);
    validators.set(schema, v);
  }
  return v;
}

/** Parses stdout as the one error document and checks it against the command's schema. */
function errorDoc(stdout: string, schema: string): ErrorDoc {
  const doc = JSON.parse(stdout) as ErrorDoc;
  const validate = validatorFor(schema);
  expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
  expect(validatorFor('error')(doc)).toBe(true);
  return doc;
}

describe('one exit-code contract: a missing home is exit 2 for every command, with the error document on --json', () => {
  const missing = '/nonexistent/hermes-home';
  for (const c of HOME_COMMANDS) {
    it(`${c.name}: text (one line and a hint on stderr, nothing on stdout) and --json`, () => {
      const text = cli([...c.args, '--home', missing]);
      expect(text.status, text.stderr).toBe(2);
      expect(text.stdout).toBe('');
      expect(text.stderr).toBe(
        `hermes-fs: error: cannot use the Hermes home ${missing}: it does not exist\n` +
          'hint: pass the home with --home DIR (before or after the command) or set HERMES_HOME\n',
      );
      const json = cli([...c.args, '--home', missing, '--json']);
      expect(json.status, json.stderr).toBe(2);
      expect(errorDoc(json.stdout, c.schema)).toEqual({
        schemaVersion: 1,
        command: c.name,
        ok: false,
        exitCode: 2,
        error: {
          code: 'ENOENT',
          message: `cannot use the Hermes home ${missing}: it does not exist`,
          path: missing,
          hint: 'pass the home with --home DIR (before or after the command) or set HERMES_HOME',
        },
      });
    });
  }

  it('--home is a global option: accepted before the command', () => {
    const r = cli(['--home', missing, 'pending', 'list', '--json']);
    expect(r.status, r.stderr).toBe(2);
    expect((JSON.parse(r.stdout) as ErrorDoc).error.path).toBe(missing);
    const home = freshHome();
    fs.mkdirSync(home);
    const ok = cli(['--home', home, 'pending', 'list']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('no spool:');
  });

  it('a home that is a file is exit 2 (ENOTDIR)', () => {
    const file = path.join(path.dirname(freshHome()), 'a-file');
    fs.writeFileSync(file, '');
    const r = cli(['doctor', '--home', file, '--json']);
    expect(r.status, r.stderr).toBe(2);
    expect(errorDoc(r.stdout, 'doctor').error).toMatchObject({ code: 'ENOTDIR', path: file });
  });

  it('matrix reads no home: --home is a usage error (exit 2) with the error document', () => {
    const r = cli(['matrix', '--home', missing, '--json']);
    expect(r.status, r.stderr).toBe(2);
    expect(errorDoc(r.stdout, 'matrix').error.code).toBe('EUSAGE');
  });

  it('usage errors are exit 2 and, with --json, an error document naming the command', () => {
    const cases: readonly [readonly string[], string, string][] = [
      [['pending', 'show'], 'pending show', 'pending-show'],
      [['pending', 'list', '--limit', 'x'], 'pending list', 'pending-list'],
      [['save'], 'save', 'save'],
      [['doctor', '--frobnicate'], 'doctor', 'doctor'],
    ];
    for (const [args, command, schema] of cases) {
      const r = cli([...args, '--json']);
      expect(r.status, args.join(' ')).toBe(2);
      const doc = errorDoc(r.stdout, schema);
      expect(doc).toMatchObject({ command, ok: false, exitCode: 2, error: { code: 'EUSAGE' } });
    }
  });
});

describeNeeds(['root', 'useradd'], 'an unreadable home: exit 2 for every command, as a real non-root uid', () => {
  let users: TestUsers;
  let home: string;

  beforeAll(() => {
    users = createTestUsers(1);
    home = freshHome();
    fs.chmodSync(path.dirname(home), 0o755);
    fs.mkdirSync(home, { mode: 0o700 });
    fs.mkdirSync(path.join(home, 'pending_messages'), { mode: 0o700 });
  });

  afterAll(() => {
    users.cleanup();
  });

  for (const c of HOME_COMMANDS) {
    it(`${c.name}: uid of a throwaway user on a root-owned 0700 home`, () => {
      const [u] = users.users;
      if (u === undefined) throw new Error('no user');
      const as = { uid: u.uid, gid: users.gid, env: { HERMES_HOME: undefined } };
      const text = runNode(BIN, [...c.args, '--home', home], as);
      expect(text.status, text.stderr).toBe(2);
      expect(text.stdout).toBe('');
      expect(text.stderr).toBe(
        `hermes-fs: error: cannot use the Hermes home ${home}: uid ${u.uid} may not read it (EACCES; mode 0700, owner uid 0)\n` +
          "hint: run as uid 0 (the home's owner), a member of its group when it is group-shared, or root\n",
      );
      const json = runNode(BIN, [...c.args, '--home', home, '--json'], as);
      expect(json.status, json.stderr).toBe(2);
      expect(errorDoc(json.stdout, c.schema)).toMatchObject({ command: c.name, ok: false, exitCode: 2, error: { code: 'EACCES', path: home } });
    });
  }
});
