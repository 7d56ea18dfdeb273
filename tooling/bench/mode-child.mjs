#!/usr/bin/env node
// The primitive cases (B1–B2b-many, R1) in this process's anchor mode, their results printed as one JSON document.
// The anchor mode is decided once per process, so run.mjs measures the second mode here: it starts this file with
// HERMES_FS_ANCHOR=procfd, and the rows join the run's table as `<id>-procfd`.
//   mode-child.mjs <work directory> <samples per side> [<comma-separated case ids>]
import { anchorInfo } from '../../packages/fs-policy/dist/index.js';
import { primitiveCases } from './cases-primitives.mjs';

const [workRoot, samplesArg, idsArg] = process.argv.slice(2);
if (workRoot === undefined || !/^\d+$/.test(samplesArg ?? '')) {
  console.error('usage: mode-child.mjs <work directory> <samples per side> [<case ids>]');
  process.exit(2);
}
const ids = idsArg === undefined || idsArg === '' ? undefined : idsArg.split(',');
const results = await primitiveCases(workRoot, { samples: Number(samplesArg), want: (id) => ids === undefined || ids.includes(id) });
process.stdout.write(`${JSON.stringify({ anchor: anchorInfo(), results })}\n`);
