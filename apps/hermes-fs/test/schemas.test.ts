import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { runNode } from '@hermes/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, cleanupHomes, fixture, freshHome, seedHome, type SeedResult } from './helpers.js';

afterAll(cleanupHomes);

const SCHEMAS = ['doctor', 'error', 'matrix', 'pending-export', 'pending-list', 'pending-prune', 'pending-recover', 'pending-show', 'provision', 'save'] as const;
type SchemaName = (typeof SCHEMAS)[number];

const require = createRequire(import.meta.url);
const GEN = fileURLToPath(new URL('../scripts/gen-schemas.mjs', import.meta.url));
const PIDNS = fs.readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, '$1');

function schema(name: string): object {
  return JSON.parse(fs.readFileSync(require.resolve(`hermes-fs/schema/${name}.schema.json`), 'utf8')) as object;
}

describe('JSON Schemas: generated from src/json/, shipped, exported', () => {
  it('every schema resolves through the package exports ("hermes-fs/schema/*.json"), is listed in "files" and compiles in strict mode', () => {
    const ajv = new Ajv({ allErrors: true, strict: true });
    const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { files: string[]; exports: Record<string, unknown> };
    expect(pkg.files).toContain('schema');
    expect(pkg.exports['./schema/*.json']).toBe('./schema/*.json');
    expect(fs.readdirSync(new URL('../schema/', import.meta.url)).sort()).toEqual(SCHEMAS.map((n) => `${n}.schema.json`));
    for (const name of SCHEMAS) {
      const file = require.resolve(`hermes-fs/schema/${name}.schema.json`);
      expect(path.basename(file)).toBe(`${name}.schema.json`);
      expect(ajv.validateSchema(schema(name)), name).toBe(true);
      expect((schema(name) as { $id: string }).$id).toBe(`https://hermes.invalid/schemas/hermes-fs/${name}.schema.json`);
    }
  });

  it('the committed schema files are exactly what the zod definitions generate (else: run pnpm -C apps/hermes-fs schemas)', () => {
    const r = runNode(GEN, ['--check']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('gen-schemas: every schema file is up to date\n');
    expect(r.status, r.stderr).toBe(0);
  });
});

interface Case {
  readonly schema: SchemaName;
  readonly args: readonly string[];
  /** The exit code the run must end with. */
  readonly status: number;
}

describe('every command × mode with --json validates against its schema', () => {
  let pendingHome: string;
  let seed: SeedResult;
  let snapshotId: string;
  let payloadId: string;
  let doctorHome: string;
  let partialHome: string;

  beforeAll(() => {
    pendingHome = freshHome();
    seed = seedHome(pendingHome);
    const r = runNode(fixture('spool-extra.mjs'), [pendingHome, seed.sessionId], { env: { HERMES_HOME: pendingHome } });
    if (r.status !== 0) throw new Error(r.stderr);
    snapshotId = /pending-([0-9a-f]{32})\.json/.exec((JSON.parse(r.stdout) as { snapshot: string }).snapshot)?.[1] ?? '';
    payloadId = /pending-([0-9a-f]{32})\.json/.exec(seed.payload)?.[1] ?? '';

    // A complete payload under a killed writer's temp name: the doctor finds it, --dry-run would salvage it, --fix does.
    doctorHome = freshHome();
    const d = seedHome(doctorHome);
    fs.renameSync(d.payload, path.join(path.dirname(d.payload), `.${path.basename(d.payload)}.4194305-${PIDNS}.0123456789ab.tmp`));
    // An incomplete one: --fix moves it aside as .partial ("salvaged").
    partialHome = freshHome();
    seedHome(partialHome);
    const temp = path.join(partialHome, 'pending_messages', `.pending-x.json.4194305-${PIDNS}.0123456789ab.tmp`);
    fs.writeFileSync(temp, '{');
    fs.chmodSync(temp, 0o600);
  });

  it('doctor, matrix, pending list/show/recover/prune/export, save, provision and the error documents: 0 invalid', () => {
    const cases: Case[] = [
      // doctor: plain, --dry-run, --fix (in this order: the dry run changes nothing), and a partial temp.
      { schema: 'doctor', args: ['doctor', '--unmanaged', '--home', doctorHome], status: 1 },
      { schema: 'doctor', args: ['doctor', '--unmanaged', '--dry-run', '--home', doctorHome], status: 1 },
      { schema: 'doctor', args: ['doctor', '--unmanaged', '--fix', '--home', doctorHome], status: 0 },
      { schema: 'doctor', args: ['doctor', '--unmanaged', '--fix', '--home', partialHome], status: 0 },
      { schema: 'doctor', args: ['doctor', '--home', pendingHome], status: 0 },
      // matrix: one artifact, no accounts.
      { schema: 'matrix', args: ['matrix', '--only', 'pending-messages', '--no-cross-uid'], status: 0 },
      // pending list: the stream, the newest N, every file.
      { schema: 'pending-list', args: ['pending', 'list', '--home', pendingHome], status: 0 },
      { schema: 'pending-list', args: ['pending', 'list', '--limit', '2', '--home', pendingHome], status: 0 },
      { schema: 'pending-list', args: ['pending', 'list', '--all', '--home', pendingHome], status: 0 },
      // pending show: a snapshot, a payload.
      { schema: 'pending-show', args: ['pending', 'show', snapshotId, '--home', pendingHome], status: 0 },
      { schema: 'pending-show', args: ['pending', 'show', payloadId.slice(0, 8), '--home', pendingHome], status: 0 },
      // pending export: saved (each format, --output) and printed (--stdout, each format).
      { schema: 'pending-export', args: ['pending', 'export', snapshotId, '--home', pendingHome], status: 0 },
      { schema: 'pending-export', args: ['pending', 'export', snapshotId, '--format', 'json', '--home', pendingHome], status: 0 },
      { schema: 'pending-export', args: ['pending', 'export', snapshotId, '--output', 'incident.html', '--redact', '--home', pendingHome], status: 0 },
      { schema: 'pending-export', args: ['pending', 'export', snapshotId, '--stdout', '--home', pendingHome], status: 0 },
      { schema: 'pending-export', args: ['pending', 'export', snapshotId, '--stdout', '--format', 'html', '--home', pendingHome], status: 0 },
      { schema: 'pending-export', args: ['pending', 'export', snapshotId, '--stdout', '--format', 'json', '--redact', '--home', pendingHome], status: 0 },
      // save: each format, a chosen name.
      { schema: 'save', args: ['save', '--session', seed.sessionId, '--home', pendingHome], status: 0 },
      { schema: 'save', args: ['save', '--session', seed.sessionId, '--format', 'md', '--home', pendingHome], status: 0 },
      { schema: 'save', args: ['save', '--session', seed.sessionId, '--format', 'html', '--redact', '--home', pendingHome], status: 0 },
      { schema: 'save', args: ['save', '--session', seed.sessionId, '--output', 'chosen.json', '--home', pendingHome], status: 0 },
      // provision: each target.
      { schema: 'provision', args: ['provision', 'tmpfiles'], status: 0 },
      { schema: 'provision', args: ['provision', 'tmpfiles', '--unmanaged', '--home-mode', '0701'], status: 0 },
      { schema: 'provision', args: ['provision', 'systemd'], status: 0 },
      { schema: 'provision', args: ['provision', 'systemd', '--exec-start', '/usr/bin/hermes gateway', '--flush-budget-ms', '15000'], status: 0 },
      { schema: 'provision', args: ['provision', 'nixos'], status: 0 },
      { schema: 'provision', args: ['provision', 'registry'], status: 0 },
      // pending prune: the dry runs, then a real one; recover: a .bad file (exit 1), then an empty pass.
      { schema: 'pending-prune', args: ['pending', 'prune', '--home', pendingHome], status: 0 },
      { schema: 'pending-prune', args: ['pending', 'prune', '--older-than', '0', '--dry-run', '--home', pendingHome], status: 0 },
      { schema: 'pending-recover', args: ['pending', 'recover', '--home', pendingHome], status: 1 },
      { schema: 'pending-recover', args: ['pending', 'recover', '--home', pendingHome], status: 0 },
      { schema: 'pending-prune', args: ['pending', 'prune', '--older-than', '0', '--yes', '--home', pendingHome], status: 0 },
      // Error documents: usage, a missing home, refused operations, a failed save.
      { schema: 'pending-list', args: ['pending', 'list', '--bogus', '--home', pendingHome], status: 2 },
      { schema: 'doctor', args: ['doctor', '--managed', '--unmanaged', '--home', pendingHome], status: 2 },
      { schema: 'doctor', args: ['doctor', '--home', path.join(pendingHome, 'no-such-home')], status: 2 },
      { schema: 'pending-show', args: ['pending', 'show', 'ffffffffffff', '--home', pendingHome], status: 2 },
      { schema: 'pending-export', args: ['pending', 'export', payloadId, '--home', pendingHome], status: 2 },
      { schema: 'pending-export', args: ['pending', 'export', snapshotId, '--output', 'x.pdf', '--home', pendingHome], status: 2 },
      { schema: 'matrix', args: ['matrix', '--home', pendingHome], status: 2 },
      { schema: 'save', args: ['save', '--session', 'no-such-session', '--home', pendingHome], status: 1 },
      { schema: 'pending-recover', args: ['pending', 'recover', '--home', doctorHome.replace(/home$/, 'nowhere')], status: 2 },
      { schema: 'error', args: ['provision', 'systemd', '--flush-budget-ms', '0'], status: 2 },
    ];
    const ajv = new Ajv({ allErrors: true, strict: true });
    for (const name of SCHEMAS) ajv.addSchema(schema(name));
    const invalid: string[] = [];
    const actions = new Set<string>();
    let errors = 0;
    for (const c of cases) {
      const r = cli([...c.args, '--json']);
      const label = `hermes-fs ${c.args.join(' ')} --json`;
      if (r.status !== c.status) invalid.push(`${label}: exit ${String(r.status)}, want ${String(c.status)}: ${r.stderr.split('\n')[0] ?? ''}`);
      let doc: unknown;
      try {
        doc = JSON.parse(r.stdout);
      } catch {
        invalid.push(`${label}: stdout is not one JSON document: ${JSON.stringify(r.stdout.slice(0, 80))}`);
        continue;
      }
      const validate = ajv.getSchema(`https://hermes.invalid/schemas/hermes-fs/${c.schema}.schema.json`);
      if (validate === undefined) throw new Error(`no schema ${c.schema}`);
      if (!validate(doc)) invalid.push(`${label}: ${ajv.errorsText(validate.errors)}`);
      const d = doc as { exitCode?: unknown; fix?: { changes: { action: string }[] } };
      if (d.exitCode !== undefined) errors++;
      for (const ch of d.fix?.changes ?? []) actions.add(ch.action);
    }
    console.log(`validated ${String(cases.length)} documents, ${String(invalid.length)} invalid (${String(errors)} error documents; doctor actions: ${[...actions].sort().join(', ')})`);
    expect(invalid).toEqual([]);
    expect([...actions].sort()).toEqual(['salvaged', 'would-salvage']);
    expect(errors).toBe(10);
  }, 300_000);
});
