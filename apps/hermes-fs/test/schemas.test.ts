import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { Ajv } from 'ajv';
import { runNode } from '@hermes/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, cleanupHomes, fixture, freshHome, seedHome, type SeedResult } from './helpers.js';

afterAll(cleanupHomes);

const SCHEMAS = ['doctor', 'error', 'matrix', 'pending-export', 'pending-list', 'pending-prune', 'pending-recover', 'pending-show', 'save'] as const;

const require = createRequire(import.meta.url);

function schema(name: string): object {
  return JSON.parse(fs.readFileSync(require.resolve(`hermes-fs/schema/${name}.schema.json`), 'utf8')) as object;
}

describe('JSON Schemas: shipped, exported, and true of the real output', () => {
  const ajv = new Ajv({ allErrors: true, strict: true });
  let home: string;
  let seed: SeedResult;
  let snapshotId: string;

  beforeAll(() => {
    home = freshHome();
    seed = seedHome(home);
    const r = runNode(fixture('spool-extra.mjs'), [home, seed.sessionId], { env: { HERMES_HOME: home } });
    if (r.status !== 0) throw new Error(r.stderr);
    snapshotId = /pending-([0-9a-f]{32})\.json/.exec((JSON.parse(r.stdout) as { snapshot: string }).snapshot)?.[1] ?? '';
  });

  it('every schema resolves through the package exports ("hermes-fs/schema/*.json") and is listed in "files"', () => {
    const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { files: string[]; exports: Record<string, unknown> };
    expect(pkg.files).toContain('schema');
    expect(pkg.exports['./schema/*.json']).toBe('./schema/*.json');
    for (const name of SCHEMAS) {
      const file = require.resolve(`hermes-fs/schema/${name}.schema.json`);
      expect(path.basename(file)).toBe(`${name}.schema.json`);
      expect(ajv.validateSchema(schema(name)), name).toBe(true);
    }
  });

  const cases: readonly (readonly [string, () => readonly string[]])[] = [
    ['doctor', () => ['doctor', '--home', home]],
    ['pending-list', () => ['pending', 'list', '--home', home]],
    ['pending-list', () => ['pending', 'list', '--limit', '2', '--home', home]],
    ['pending-show', () => ['pending', 'show', snapshotId, '--home', home]],
    ['pending-export', () => ['pending', 'export', snapshotId, '--home', home]],
    ['pending-prune', () => ['pending', 'prune', '--older-than', '0', '--home', home]],
    ['save', () => ['save', '--session', seed.sessionId, '--home', home]],
    ['save', () => ['save', '--session', 'no-such-session', '--home', home]],
    ['pending-recover', () => ['pending', 'recover', '--home', home]],
    ['pending-recover', () => ['pending', 'recover', '--home', home]],
    ['matrix', () => ['matrix', '--only', 'state-db']],
  ];
  for (const [name, args] of cases) {
    it(`${name}: the output of hermes-fs ${name.replace('-', ' ')} --json validates`, () => {
      const r = cli([...args(), '--json']);
      expect([0, 1]).toContain(r.status);
      const validate = ajv.getSchema(`https://hermes.invalid/schemas/hermes-fs/${name}.schema.json`) ?? ajv.compile(schema(name));
      const valid = validate(JSON.parse(r.stdout) as unknown);
      expect(validate.errors ?? []).toEqual([]);
      expect(valid).toBe(true);
    });
  }
});
