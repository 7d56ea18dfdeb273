#!/usr/bin/env node
// Reads vitest's JSON report and prints the one plain line CI understands: "N passed, N failed, N skipped".
// Exits non-zero when the report is missing or unreadable, when any test failed, or when no test ran.
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (file === undefined) {
  console.error('usage: vitest-summary.mjs <vitest-json-report>');
  process.exit(2);
}
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.error(`vitest-summary: cannot read the test report ${file}: ${err instanceof Error ? err.message : String(err)}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const passed = Number(report.numPassedTests ?? 0);
const failed = Number(report.numFailedTests ?? 0) + Number(report.numRuntimeErrorTestSuites ?? 0);
const skipped = Number(report.numPendingTests ?? 0) + Number(report.numTodoTests ?? 0);
const failedSuites = (report.testResults ?? []).filter((r) => r.status === 'failed' && (r.assertionResults ?? []).length === 0);
const failedTotal = failed + failedSuites.length;
console.log(`${passed} passed, ${failedTotal} failed, ${skipped} skipped`);
if (passed + failedTotal === 0) {
  console.error('vitest-summary: no test was executed');
  process.exit(1);
}
process.exit(failedTotal > 0 ? 1 : 0);
