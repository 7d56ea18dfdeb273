// The summary script, run as CI runs it (a child process), on fabricated reports shaped like the ones vitest
// 4.1 really writes for each case (docs/testing.md lists what vitest writes for each).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const VITEST_BIN = path.join(path.dirname(require.resolve('vitest/package.json')), 'vitest.mjs');
const SCRIPT = path.resolve(import.meta.dirname, '..', 'vitest-summary.mjs');

type Status = 'passed' | 'failed' | 'skipped' | 'todo' | 'pending';

interface FileResult {
  name: string;
  status: 'passed' | 'failed';
  message: string;
  assertionResults: { fullName: string; status: Status; failureMessages: string[] }[];
}

interface Verdict {
  reason: string;
  projects: { name: string; root: string; files: number }[];
  unhandledErrors: { type: string; name: string; message: string; file: string | null; test: string | null }[];
  fileErrors: { file: string; suite: string | null; name: string; message: string }[];
}

/** A fake repository: a root vitest.config.ts with two project globs, and projects `packages/a`, `packages/b`. */
function fakeRepo(projects: readonly string[] = ['packages/a', 'packages/b']): string {
  const root = path.join(tempRoot('hermes-summary-'), 'repo');
  fs.mkdirSync(root);
  fs.writeFileSync(
    path.join(root, 'vitest.config.ts'),
    "export default defineConfig({\n  test: {\n    projects: ['packages/*/vitest.config.ts', 'tooling/*/vitest.config.ts'],\n  },\n});\n",
  );
  for (const p of projects) {
    fs.mkdirSync(path.join(root, p), { recursive: true });
    fs.writeFileSync(path.join(root, p, 'vitest.config.ts'), 'export default {};\n');
  }
  // a directory without a vitest config is not a project
  fs.mkdirSync(path.join(root, 'packages', 'no-tests'), { recursive: true });
  return root;
}

function test(fullName: string, status: Status, failureMessages: string[] = []) {
  return { fullName, status, failureMessages };
}

function file(root: string, rel: string, status: 'passed' | 'failed', tests: FileResult['assertionResults'], message = ''): FileResult {
  return { name: path.join(root, rel), status, message, assertionResults: tests };
}

/** A JSON report as vitest's `json` reporter writes it, with the counts computed the way vitest does. */
function report(files: FileResult[], success: boolean) {
  const all = files.flatMap((f) => f.assertionResults);
  const n = (s: Status) => all.filter((t) => t.status === s).length;
  return {
    numTotalTestSuites: files.length,
    numPassedTestSuites: files.filter((f) => f.status === 'passed').length,
    numFailedTestSuites: files.filter((f) => f.status === 'failed').length,
    numPendingTestSuites: 0,
    numTotalTests: all.length,
    numPassedTests: n('passed'),
    numFailedTests: n('failed'),
    numPendingTests: n('skipped'),
    numTodoTests: n('todo'),
    startTime: 1_700_000_000_000,
    success,
    testResults: files,
  };
}

function verdict(partial: Partial<Verdict> = {}): Verdict {
  return {
    reason: 'passed',
    projects: [
      { name: 'a', root: 'packages/a', files: 1 },
      { name: 'b', root: 'packages/b', files: 1 },
    ],
    unhandledErrors: [],
    fileErrors: [],
    ...partial,
  };
}

/** Two healthy files, one per project: 3 passed, 1 skipped. */
function greenFiles(root: string): FileResult[] {
  return [
    file(root, 'packages/a/test/a.test.ts', 'passed', [test('a one', 'passed'), test('a two', 'passed'), test('a later', 'skipped')]),
    file(root, 'packages/b/test/b.test.ts', 'passed', [test('b one', 'passed')]),
  ];
}

interface Run {
  status: number | null;
  lines: string[];
  last: string;
  stderr: string;
}

function summarize(
  root: string,
  rep: unknown,
  ver: unknown,
  extra: readonly string[] = [],
): Run {
  const out = path.join(root, 'out');
  fs.mkdirSync(out, { recursive: true });
  const reportFile = path.join(out, 'vitest.json');
  if (rep !== undefined) fs.writeFileSync(reportFile, typeof rep === 'string' ? rep : JSON.stringify(rep));
  if (ver !== undefined) fs.writeFileSync(path.join(out, 'vitest.verdict.json'), JSON.stringify(ver));
  const r = spawnSync(process.execPath, [SCRIPT, reportFile, '--config', path.join(root, 'vitest.config.ts'), ...extra], {
    encoding: 'utf8',
  });
  const lines = r.stdout.trimEnd().split('\n');
  return { status: r.status, lines, last: lines.at(-1) ?? '', stderr: r.stderr };
}

describe('a healthy run (the control: the script does pass a good report)', () => {
  it('counts passed and skipped, exits 0, and prints only the summary line', () => {
    const root = fakeRepo();
    const r = summarize(root, report(greenFiles(root), true), verdict());
    expect(r.lines).toEqual(['3 passed, 0 failed, 1 skipped']);
    expect(r.status).toBe(0);
  });

  it('a todo counts as skipped', () => {
    const root = fakeRepo();
    const files = greenFiles(root);
    files[1]?.assertionResults.push(test('b someday', 'todo'));
    const r = summarize(root, report(files, true), verdict());
    expect(r.lines).toEqual(['3 passed, 0 failed, 2 skipped']);
    expect(r.status).toBe(0);
  });
});

describe('each way a run fails gives a non-zero exit and a counted, named failure', () => {
  it('a failing test: named with its file', () => {
    const root = fakeRepo();
    const files = greenFiles(root);
    files[1] = file(root, 'packages/b/test/b.test.ts', 'failed', [
      test('b one', 'failed', [
        `\u001b[31mAssertionError: expected 1 to be 2\u001b[39m\n    at node_modules/vitest/dist/x.js:1:1\n    at ${root}/packages/b/test/b.test.ts:42:7\n    at ${root}/packages/b/test/b.test.ts:50:1`,
      ]),
      test('b two', 'failed', []),
    ]);
    const r = summarize(root, report(files, false), verdict({ reason: 'failed' }));
    expect(r.lines).toEqual([
      'failed: packages/b/test/b.test.ts > b one — AssertionError: expected 1 to be 2 (packages/b/test/b.test.ts:42)',
      'failed: packages/b/test/b.test.ts > b two',
      '2 passed, 2 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('setup throw: a beforeAll that throws (its tests reported "skipped") is a failed file, named with the error', () => {
    // vitest 4.1: the file is "failed" with message "", its tests "skipped", numFailedTests 0; the hook's
    // error is on the describe block, which only the verdict reporter records.
    const root = fakeRepo();
    const files = greenFiles(root);
    files[1] = file(root, 'packages/b/test/cross-uid.test.ts', 'failed', [
      test('two uids writes', 'skipped'),
      test('two uids reads', 'skipped'),
    ]);
    const r = summarize(
      root,
      report(files, false),
      verdict({
        reason: 'failed',
        fileErrors: [{ file: 'packages/b/test/cross-uid.test.ts', suite: 'two uids', name: 'Error', message: 'spawnSync useradd ENOENT' }],
      }),
    );
    expect(r.lines).toEqual([
      'failed: packages/b/test/cross-uid.test.ts: failed outside its tests (a hook, its import, or no test in it): in "two uids": spawnSync useradd ENOENT; 2 tests did not run',
      '2 passed, 1 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('setup throw without a verdict entry: the file is still counted, with the report message', () => {
    const root = fakeRepo();
    const files = greenFiles(root);
    files[1] = file(root, 'packages/b/test/b.test.ts', 'failed', [], 'Cannot find module ./missing.js');
    const r = summarize(root, report(files, false), verdict({ reason: 'failed' }));
    expect(r.lines).toEqual([
      'failed: packages/b/test/b.test.ts: failed outside its tests (a hook, its import, or no test in it): Cannot find module ./missing.js',
      '2 passed, 1 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('teardown throw: an afterAll that throws after every test passed is a failed file', () => {
    // vitest 4.1: the file is "failed" with message "", every test "passed", numFailedTests 0.
    const root = fakeRepo();
    const files = greenFiles(root);
    files[1] = file(root, 'packages/b/test/b.test.ts', 'failed', [test('b one', 'passed')]);
    const r = summarize(
      root,
      report(files, false),
      verdict({
        reason: 'failed',
        fileErrors: [{ file: 'packages/b/test/b.test.ts', suite: null, name: 'Error', message: 'userdel: user is logged in' }],
      }),
    );
    expect(r.lines).toEqual([
      'failed: packages/b/test/b.test.ts: failed outside its tests (a hook, its import, or no test in it): userdel: user is logged in',
      '3 passed, 1 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('uncaught error outside a test: counted although the JSON report says "success": true', () => {
    // vitest 4.1: every file and test "passed", success true, reason "passed"; vitest itself exits 1.
    const root = fakeRepo();
    const r = summarize(
      root,
      report(greenFiles(root), true),
      verdict({
        unhandledErrors: [
          { type: 'Uncaught Exception', name: 'Error', message: 'boom from a timer', file: 'packages/a/test/a.test.ts', test: 'a two' },
          { type: 'Unhandled Rejection', name: 'Error', message: 'late rejection', file: 'packages/b/test/b.test.ts', test: null },
        ],
      }),
    );
    expect(r.lines).toEqual([
      'failed: Uncaught Exception in packages/a/test/a.test.ts (last test: "a two"): Error: boom from a timer',
      'failed: Unhandled Rejection in packages/b/test/b.test.ts: Error: late rejection',
      '3 passed, 2 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('killed worker: tests left "pending" in a file marked "passed", and the pool error, both counted', () => {
    // vitest 4.1 after SIGKILL of a fork: the file "passed", its tests "pending", success true, reason
    // "passed", one unhandled "[vitest-pool]: Worker forks emitted error." with no file.
    const root = fakeRepo();
    const files = greenFiles(root);
    files[1] = file(root, 'packages/b/test/b.test.ts', 'passed', [test('b one', 'pending'), test('b two', 'pending')]);
    const r = summarize(
      root,
      report(files, true),
      verdict({
        unhandledErrors: [
          { type: 'Unhandled Error', name: 'Error', message: '[vitest-pool]: Worker forks emitted error. (caused by: Worker exited unexpectedly)', file: null, test: null },
        ],
      }),
    );
    expect(r.lines).toEqual([
      'failed: packages/b/test/b.test.ts: 2 tests never finished (its worker died or the run was cut short)',
      'failed: Unhandled Error: Error: [vitest-pool]: Worker forks emitted error. (caused by: Worker exited unexpectedly)',
      '2 passed, 2 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('killed worker with no verdict entry: the pending tests alone fail the run', () => {
    const root = fakeRepo();
    const files = greenFiles(root);
    files[1] = file(root, 'packages/b/test/b.test.ts', 'passed', [test('b one', 'pending')]);
    const r = summarize(root, report(files, true), verdict());
    expect(r.lines).toEqual([
      'failed: packages/b/test/b.test.ts: 1 test never finished (its worker died or the run was cut short)',
      '2 passed, 1 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('empty project: a project vitest resolved with no test file (absent from the JSON report)', () => {
    // vitest 4.1 drops such a project from the JSON report, says success true and exits 0.
    const root = fakeRepo();
    const files = greenFiles(root).slice(0, 1);
    const r = summarize(
      root,
      report(files, true),
      verdict({
        projects: [
          { name: 'a', root: 'packages/a', files: 1 },
          { name: 'b', root: 'packages/b', files: 0 },
        ],
      }),
    );
    expect(r.lines).toEqual([
      'failed: project b (packages/b): no test file ran (does its include pattern match anything?)',
      '2 passed, 1 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('empty project: a project directory the root config globs match, unknown to the verdict, with no file in the report', () => {
    const root = fakeRepo(['packages/a', 'packages/b', 'tooling/c']);
    const r = summarize(root, report(greenFiles(root), true), verdict());
    expect(r.lines).toEqual(['failed: project tooling/c: no test file of it in the report', '3 passed, 1 failed, 1 skipped']);
    expect(r.status).toBe(1);
  });

  it('zero tests in a file: vitest\'s "No test found in suite" is a failed file', () => {
    const root = fakeRepo();
    const files = greenFiles(root);
    files.push(file(root, 'packages/b/test/empty.test.ts', 'failed', [], 'No test found in suite test/empty.test.ts'));
    const r = summarize(root, report(files, false), verdict({ reason: 'failed' }));
    expect(r.lines).toEqual([
      'failed: packages/b/test/empty.test.ts: failed outside its tests (a hook, its import, or no test in it): No test found in suite test/empty.test.ts',
      '3 passed, 1 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('zero tests in the run: every test skipped is a failure, although vitest says success', () => {
    const root = fakeRepo();
    const files = [
      file(root, 'packages/a/test/a.test.ts', 'passed', [test('a one', 'skipped')]),
      file(root, 'packages/b/test/b.test.ts', 'passed', [test('b one', 'skipped')]),
    ];
    const r = summarize(root, report(files, true), verdict());
    expect(r.lines).toEqual(['failed: no test was executed', '0 passed, 1 failed, 2 skipped']);
    expect(r.status).toBe(1);
  });

  it('zero tests in the run: an empty report (no file at all)', () => {
    const root = fakeRepo();
    const r = summarize(
      root,
      report([], false),
      verdict({
        reason: 'failed',
        projects: [
          { name: 'a', root: 'packages/a', files: 0 },
          { name: 'b', root: 'packages/b', files: 0 },
        ],
      }),
    );
    expect(r.lines).toEqual([
      'failed: vitest reported "success": false, and its report names no failing test or file',
      'failed: project a (packages/a): no test file ran (does its include pattern match anything?)',
      'failed: project b (packages/b): no test file ran (does its include pattern match anything?)',
      'failed: no test was executed',
      '0 passed, 4 failed, 0 skipped',
    ]);
    expect(r.status).toBe(1);
  });
});

describe('what the script cannot see is a failure, never a pass', () => {
  it('a missing report', () => {
    const root = fakeRepo();
    const r = summarize(root, undefined, verdict());
    expect(r.lines[0]).toMatch(/^failed: the test report: cannot read the test report .*vitest\.json \(ENOENT\)/);
    expect(r.last).toBe('0 passed, 1 failed, 0 skipped');
    expect(r.status).toBe(1);
  });

  it('a report that is not JSON', () => {
    const root = fakeRepo();
    const r = summarize(root, '{"numPassedTests": 3,', verdict());
    expect(r.lines[0]).toMatch(/^failed: the test report: cannot read the test report .*vitest\.json: /);
    expect(r.last).toBe('0 passed, 1 failed, 0 skipped');
    expect(r.status).toBe(1);
  });

  it('a missing verdict (unhandled errors cannot be counted)', () => {
    const root = fakeRepo();
    const r = summarize(root, report(greenFiles(root), true), undefined);
    expect(r.lines[0]).toMatch(/^failed: the verdict \(unhandled errors, file and suite errors\): cannot read the verdict .*vitest\.verdict\.json \(ENOENT\)/);
    expect(r.last).toBe('3 passed, 1 failed, 1 skipped');
    expect(r.status).toBe(1);
  });

  it('"success": false with nothing failing in the report', () => {
    const root = fakeRepo();
    const r = summarize(root, report(greenFiles(root), false), verdict());
    expect(r.lines).toEqual([
      'failed: vitest reported "success": false, and its report names no failing test or file',
      '3 passed, 1 failed, 1 skipped',
    ]);
    expect(r.status).toBe(1);
  });

  it('an interrupted run', () => {
    const root = fakeRepo();
    const r = summarize(root, report(greenFiles(root), true), verdict({ reason: 'interrupted' }));
    expect(r.lines).toEqual(['failed: vitest ended the run as "interrupted" and names no failure', '3 passed, 1 failed, 1 skipped']);
    expect(r.status).toBe(1);
  });

  it('the test command exited non-zero (e.g. its build step) with a clean report', () => {
    const root = fakeRepo();
    const r = summarize(root, report(greenFiles(root), true), verdict(), ['--exit-code', '2']);
    expect(r.lines).toEqual(['failed: the test command exited 2, and nothing in its report explains it', '3 passed, 1 failed, 1 skipped']);
    expect(r.status).toBe(1);
  });

  it('a root config whose projects are not a list of string globs', () => {
    const root = fakeRepo();
    fs.writeFileSync(path.join(root, 'vitest.config.ts'), 'export default defineConfig({ test: { projects: [someVariable] } });\n');
    const r = summarize(root, report(greenFiles(root), true), verdict());
    expect(r.lines[0]).toMatch(/^failed: the expected projects: .*vitest\.config\.ts: the `projects` array holds something other than string globs$/);
    expect(r.last).toBe('3 passed, 1 failed, 1 skipped');
    expect(r.status).toBe(1);
  });

  it('bad usage exits 2', () => {
    const r = spawnSync(process.execPath, [SCRIPT, '--exit-code'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('vitest-summary: --exit-code needs a value');
  });
});

describe('a real vitest 4.1 run with the verdict reporter (fixtures/broken-run: one project per failure)', () => {
  it('every hidden failure is counted and named; the one healthy project passes', () => {
    const fixture = path.join(import.meta.dirname, 'fixtures', 'broken-run');
    const out = tempRoot('hermes-summary-');
    const reportFile = path.join(out, 'vitest.json');
    const env: NodeJS.ProcessEnv = { ...process.env, HERMES_TEST_JSON: reportFile };
    // the child is a fresh vitest, not a worker of this one
    for (const k of Object.keys(env)) if (k.startsWith('VITEST') || k === 'NODE_OPTIONS') env[k] = undefined;
    const vitest = spawnSync(process.execPath, [VITEST_BIN, 'run'], {
      cwd: fixture,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(vitest.status).toBe(1);
    const r = spawnSync(
      process.execPath,
      [SCRIPT, reportFile, '--config', path.join(fixture, 'vitest.config.mjs'), '--exit-code', String(vitest.status)],
      { encoding: 'utf8' },
    );
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.at(-1)).toBe('3 passed, 7 failed, 1 skipped');
    expect(lines.slice(0, -1).sort()).toEqual([
      'failed: Uncaught Exception in uncaught/uncaught.case.mjs (last test: "throws from a timer, outside the test"): Error: uncaught from a timer',
      'failed: Unhandled Error: Error: [vitest-pool]: Worker forks emitted error. (caused by: Worker exited unexpectedly)',
      'failed: killed/killed.case.mjs: 1 test never finished (its worker died or the run was cut short)',
      'failed: project empty (empty): no test file ran (does its include pattern match anything?)',
      'failed: setup/setup.case.mjs: failed outside its tests (a hook, its import, or no test in it): in "needs a tool": useradd: not found; 2 tests did not run',
      'failed: teardown/teardown.case.mjs: failed outside its tests (a hook, its import, or no test in it): cleanup failed',
      'failed: zero/zero.case.mjs: failed outside its tests (a hook, its import, or no test in it): No test found in suite zero.case.mjs; in "holds no test": No test found in suite holds no test',
    ]);
    expect(r.status).toBe(1);
  });
});

describe('the real root config', () => {
  it('its project globs are read, and this project is among the directories they match', () => {
    // A report with one file of this project only: every other project is reported as having no test file,
    // which proves the globs were read and expanded against the repository.
    const repo = path.resolve(import.meta.dirname, '..', '..', '..');
    const out = tempRoot('hermes-summary-');
    const reportFile = path.join(out, 'vitest.json');
    const files = [file(repo, 'tooling/scripts/test/vitest-summary.test.ts', 'passed', [test('x', 'passed')])];
    fs.writeFileSync(reportFile, JSON.stringify(report(files, true)));
    fs.writeFileSync(path.join(out, 'vitest.verdict.json'), JSON.stringify(verdict({ projects: [] })));
    const r = spawnSync(process.execPath, [SCRIPT, reportFile], { encoding: 'utf8' });
    const missing = r.stdout.split('\n').filter((l) => l.startsWith('failed: project '));
    expect(missing).toContain('failed: project packages/gateway: no test file of it in the report');
    expect(missing).toContain('failed: project apps/hermes-fs: no test file of it in the report');
    expect(missing).toContain('failed: project tooling/eslint-config: no test file of it in the report');
    expect(missing.some((l) => l.includes('tooling/scripts'))).toBe(false);
    expect(r.status).toBe(1);
  });
});
