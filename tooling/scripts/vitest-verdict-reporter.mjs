// A vitest reporter that writes what vitest's JSON report leaves out, for vitest-summary.mjs:
// - the run's own verdict (`reason`: passed | failed | interrupted),
// - the unhandled errors (an uncaught exception or rejection outside a test, a worker that died) — the JSON
//   report counts none of them and can say `"success": true` while vitest exits 1,
// - the errors attached to a file or a suite rather than a test (a throwing beforeAll/afterAll, a module that
//   fails to import) — the JSON report marks such a file failed with an empty message,
// - every project vitest resolved, with how many test files ran in it (a project whose include pattern matches
//   nothing is absent from the JSON report).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';

/** Where the verdict of a run whose JSON report is `reportPath` is written (and read back). */
export function verdictPathFor(reportPath) {
  return `${reportPath.replace(/\.json$/, '')}.verdict.json`;
}

function text(value) {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

function describeError(err) {
  const e = err ?? {};
  const cause = e.cause !== undefined && e.cause !== null ? text(e.cause.message ?? e.cause) : '';
  return { name: text(e.name) || 'Error', message: text(e.message) + (cause === '' ? '' : ` (caused by: ${cause})`) };
}

export default class VerdictReporter {
  constructor(options = {}) {
    if (typeof options.outputFile !== 'string' || options.outputFile === '') {
      throw new Error('vitest-verdict-reporter: the outputFile option is required');
    }
    this.outputFile = options.outputFile;
  }

  onInit(vitest) {
    this.vitest = vitest;
  }

  onTestRunEnd(testModules, unhandledErrors, reason) {
    const root = this.vitest.config.root;
    const rel = (p) => (typeof p === 'string' && p !== '' ? relative(root, p) : undefined);
    const filesPerProject = new Map();
    const fileErrors = [];
    for (const m of testModules) {
      filesPerProject.set(m.project.name, (filesPerProject.get(m.project.name) ?? 0) + 1);
      const file = rel(m.moduleId);
      for (const err of m.errors()) fileErrors.push({ file, suite: null, ...describeError(err) });
      for (const suite of m.children.allSuites()) {
        for (const err of suite.errors()) fileErrors.push({ file, suite: suite.fullName, ...describeError(err) });
      }
    }
    const verdict = {
      reason,
      projects: this.vitest.projects.map((p) => ({
        name: p.name,
        root: rel(p.config.root) ?? '.',
        files: filesPerProject.get(p.name) ?? 0,
      })),
      unhandledErrors: unhandledErrors.map((err) => ({
        type: text(err.type) || 'Unhandled Error',
        ...describeError(err),
        file: rel(err.VITEST_TEST_PATH) ?? null,
        test: text(err.VITEST_TEST_NAME) || null,
      })),
      fileErrors,
    };
    mkdirSync(dirname(this.outputFile), { recursive: true });
    writeFileSync(this.outputFile, `${JSON.stringify(verdict, null, 2)}\n`);
  }
}
