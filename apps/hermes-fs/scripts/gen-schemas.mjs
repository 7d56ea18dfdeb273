#!/usr/bin/env node
// Writes schema/*.schema.json from the zod definitions in src/json/ (read from the built dist/).
// `--check`: write nothing, exit 1 and name the files that differ from what the definitions generate.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'dist/json/generate.js');
if (!fs.existsSync(entry)) {
  console.error(`gen-schemas: ${entry} is missing: build first (pnpm -C apps/hermes-fs build)`);
  process.exit(2);
}
const { generateSchemaFiles } = await import(entry);
const check = process.argv.includes('--check');
const dir = path.join(root, 'schema');
const stale = [];
for (const [name, text] of generateSchemaFiles()) {
  const file = path.join(dir, name);
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
  if (old === text) continue;
  stale.push(name);
  if (!check) fs.writeFileSync(file, text);
}
if (check && stale.length > 0) {
  console.error(`gen-schemas: ${stale.join(', ')} differ from the definitions in src/json/: run pnpm -C apps/hermes-fs schemas`);
  process.exit(1);
}
console.log(check ? 'gen-schemas: every schema file is up to date' : `gen-schemas: wrote ${stale.length} file(s)${stale.length > 0 ? `: ${stale.join(', ')}` : ''}`);
