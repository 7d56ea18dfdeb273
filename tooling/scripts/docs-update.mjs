#!/usr/bin/env node
// `pnpm docs:update`: runs every runnable transcript of README.md and docs/*.md (see docs-blocks.mjs) and writes
// what the commands print now into the file. `--check` changes nothing and exits 1 on drift, naming file and line.
// Usage: node tooling/scripts/docs-update.mjs [--check] [FILE.md …]   (build first: pnpm build)
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CLI, ROOT, documentedFiles, findBlocks, firstDrift, rewrite, runBlocks } from './docs-blocks.mjs';

const args = process.argv.slice(2);
const check = args.includes('--check');
const files = args.filter((a) => a !== '--check');
if (!fs.existsSync(CLI)) {
  process.stderr.write(`docs-update: ${path.relative(ROOT, CLI)} is missing: run pnpm build first\n`);
  process.exit(2);
}
let blocksRun = 0;
let drifted = 0;
for (const rel of files.length > 0 ? files.map((f) => path.relative(ROOT, path.resolve(f))) : documentedFiles()) {
  const file = path.join(ROOT, rel);
  const text = fs.readFileSync(file, 'utf8');
  const blocks = findBlocks(rel, text);
  if (blocks.length === 0) continue;
  const bodies = runBlocks(blocks);
  blocksRun += blocks.length;
  // A block that agrees after normalisation keeps its text: only drift is rewritten.
  const next = blocks.map((block, i) => {
    const drift = firstDrift(block.body, bodies[i]);
    if (drift === undefined) return block.body;
    drifted++;
    process.stdout.write(`${rel}:${block.bodyLine + drift.line - 1}: ${check ? 'drift' : 'updated'}\n  docs:   ${drift.expected}\n  actual: ${drift.actual}\n`);
    return bodies[i];
  });
  if (!check) {
    const updated = rewrite(text, blocks, next);
    if (updated !== text) fs.writeFileSync(file, updated);
  }
}
process.stdout.write(`${String(blocksRun)} runnable blocks, ${String(drifted)} ${check ? 'drifted' : 'changed'}\n`);
process.exitCode = check && drifted > 0 ? 1 : 0;
