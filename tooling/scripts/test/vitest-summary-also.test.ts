// `--also`: a second vitest run (the release test, with its own config) joins the one summary line CI reads.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';

const SCRIPT = path.resolve(import.meta.dirname, '..', 'vitest-summary.mjs');

type Status = 'passed' | 'failed' | 'skipped';

/** A fake repository with one project, `packages/a`, and a run directory `out/`. */
function fakeRepo(): string {
  const root = path.join(tempRoot('hermes-summary-also-'), 'repo');
  fs.mkdirSync(path.join(root, 'packages', 'a'), { recursive: true });
  fs.mkdirSync(path.join(root, 'out'));
  fs.writeFileSync(path.join(root, 'vitest.config.ts'), "export default defineConfig({ test: { projects: ['packages/*/vitest.config.ts'] } });\n");
  fs.writeFileSync(path.join(root, 'packages', 'a', 'vitest.config.ts'), 'export default {};\n');
  return root;
}

/** Writes a JSON report and its verdict (as vitest and the verdict reporter do) for one file's tests. */
function writeRun(root: string, name: string, file: string, tests: readonly [string, Status][], project = { name: 'a', root: 'packages/a' }): string {
  const report = path.join(root, 'out', `${name}.json`);
  const failed = tests.some(([, s]) => s === 'failed');
  fs.writeFileSync(
    report,
    JSON.stringify({
      success: !failed,
      testResults: [
        {
          name: path.join(root, file),
          status: failed ? 'failed' : 'passed',
          message: '',
          assertionResults: tests.map(([fullName, status]) => ({ fullName, status, failureMessages: [] })),
        },
      ],
    }),
  );
  fs.writeFileSync(
    path.join(root, 'out', `${name}.verdict.json`),
    JSON.stringify({ reason: failed ? 'failed' : 'passed', projects: [{ ...project, files: 1 }], unhandledErrors: [], fileErrors: [] }),
  );
  return report;
}

function summarize(root: string, args: readonly string[]): { status: number | null; lines: string[] } {
  const r = spawnSync(process.execPath, [SCRIPT, ...args, '--config', path.join(root, 'vitest.config.ts')], { encoding: 'utf8' });
  return { status: r.status, lines: r.stdout.trimEnd().split('\n') };
}

describe('--also adds a separate run to the one summary line', () => {
  const release = { name: 'release', root: 'tooling/release-test' };

  it('two green runs: the counts add up, exit 0', () => {
    const root = fakeRepo();
    const main = writeRun(root, 'vitest', 'packages/a/test/a.test.ts', [['a one', 'passed'], ['a two', 'passed'], ['a later', 'skipped']]);
    const also = writeRun(root, 'release', 'tooling/release-test/test/release.test.ts', [['publishes', 'passed'], ['installs', 'passed']], release);
    const r = summarize(root, [main, '--exit-code', '0', '--also', also, '--also-exit-code', '0']);
    expect(r.lines).toEqual(['4 passed, 0 failed, 1 skipped']);
    expect(r.status).toBe(0);
  });

  it('a failing test in the added run is named and counted, and fails the summary', () => {
    const root = fakeRepo();
    const main = writeRun(root, 'vitest', 'packages/a/test/a.test.ts', [['a one', 'passed']]);
    const also = writeRun(root, 'release', 'tooling/release-test/test/release.test.ts', [['publishes', 'passed'], ['installs', 'failed']], release);
    const r = summarize(root, [main, '--also', also, '--also-exit-code', '1']);
    expect(r.lines).toEqual(['failed: tooling/release-test/test/release.test.ts > installs', '2 passed, 1 failed, 0 skipped']);
    expect(r.status).toBe(1);
  });

  it('an added run that left no report is a failure, never a pass', () => {
    const root = fakeRepo();
    const main = writeRun(root, 'vitest', 'packages/a/test/a.test.ts', [['a one', 'passed']]);
    const r = summarize(root, [main, '--also', path.join(root, 'out', 'missing.json'), '--also-exit-code', '1']);
    expect(r.lines.at(-1)).toBe('1 passed, 2 failed, 0 skipped');
    expect(r.lines.slice(0, -1)).toEqual([
      expect.stringMatching(/^failed: the test report: cannot read the test report .*missing\.json \(ENOENT\)/),
      expect.stringMatching(/^failed: the verdict \(unhandled errors, file and suite errors\): cannot read the verdict .*missing\.verdict\.json \(ENOENT\)/),
    ]);
    expect(r.status).toBe(1);
  });

  it('--also-exit-code without --also is bad usage', () => {
    const root = fakeRepo();
    const main = writeRun(root, 'vitest', 'packages/a/test/a.test.ts', [['a one', 'passed']]);
    expect(summarize(root, [main, '--also-exit-code', '1']).status).toBe(2);
  });
});
