#!/usr/bin/env node
// The last line of a CI run: "N passed, N failed, N skipped", computed from vitest's own verdict, preceded by
// one "failed: …" line per failure that names it and, for a failed test, gives the first line of its message. Exits 1 when anything failed or no test ran, 2 on bad usage.
//
//   vitest-summary.mjs <report.json> [--verdict <file>] [--config <vitest.config.ts>] [--exit-code <n>]
//                      [--also <report.json> [--also-exit-code <n>]]...
//
// --also adds a separate vitest run (e.g. the release test, which has its own config): its report and the
// verdict next to it are read the same way (no project globs: a single-config run), its failures are listed
// and its counts added to the one summary line.
//
// Sources, each read because the others miss something (see docs/testing.md):
// - the JSON report (vitest's `json` reporter): per-test results and `success`. A file that failed outside
//   its tests (a throwing beforeAll/afterAll, a module that does not import, a file with no test) is
//   "failed" with no failed test and often an empty message; tests a beforeAll stopped are "skipped"; tests
//   of a worker that died are "pending" in a file marked "passed".
// - the verdict (vitest-verdict-reporter.mjs, default <report>.verdict.json): the run's reason, unhandled
//   errors (the JSON report has none and can say `"success": true` while vitest exits 1), and the errors of
//   files and suites with their messages.
// - the root vitest config's project globs: every project directory they match must have a test file in the
//   report (vitest drops a project whose include pattern matches nothing, and still exits 0).
// - the test command's exit code (--exit-code): a non-zero exit with nothing else counted is still a failure.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verdictPathFor } from './vitest-verdict-reporter.mjs';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The `projects` globs of a root vitest config, read from its source text. Only a literal array of string
 * globs is understood; anything else throws (the expected projects must never be silently empty).
 */
export function projectGlobsOf(configText) {
  const m = /\bprojects\s*:\s*\[([^\]]*)\]/.exec(configText);
  if (m === null) throw new Error('no `projects: [...]` array found');
  const body = m[1];
  const globs = [];
  const rest = body.replace(/'([^'\\]*)'|"([^"\\]*)"/g, (_all, a, b) => {
    globs.push(a ?? b);
    return '';
  });
  if (rest.replace(/\/\/[^\n]*/g, '').replace(/[\s,]/g, '') !== '') {
    throw new Error('the `projects` array holds something other than string globs');
  }
  if (globs.length === 0) throw new Error('the `projects` array is empty');
  return globs;
}

function segmentRegExp(segment) {
  return new RegExp(`^${segment.split('*').map((s) => s.replace(/[.+^${}()|[\]\\?]/g, '\\$&')).join('[^/]*')}$`);
}

/** The files under `root` matching `glob` (path segments, `*` within a segment; no `**`, braces or classes). */
export function expandGlob(root, glob) {
  if (/\*\*|[{}[\]?!]/.test(glob)) throw new Error(`unsupported glob ${glob} (only * within a path segment)`);
  let found = [''];
  for (const segment of glob.split('/')) {
    const next = [];
    for (const base of found) {
      const dir = join(root, base);
      if (!segment.includes('*')) {
        if (existsSync(join(dir, segment))) next.push(base === '' ? segment : `${base}/${segment}`);
        continue;
      }
      let names;
      try {
        names = readdirSync(dir);
      } catch (err) {
        // a path segment that is a file, or absent: nothing matches under it; any other error is reported
        if (err && (err.code === 'ENOTDIR' || err.code === 'ENOENT')) continue;
        throw err;
      }
      const re = segmentRegExp(segment);
      for (const name of names.sort()) {
        if (name.startsWith('.') || !re.test(name)) continue;
        next.push(base === '' ? name : `${base}/${name}`);
      }
    }
    found = next;
  }
  return found.filter((p) => statSync(join(root, p)).isFile());
}

/** The project directories (relative to the config's directory) the root vitest config's globs match. */
export function expectedProjects(configPath) {
  const root = dirname(configPath);
  const dirs = new Set();
  for (const glob of projectGlobsOf(readFileSync(configPath, 'utf8'))) {
    for (const file of expandGlob(root, glob)) dirs.add(dirname(file));
  }
  return [...dirs].sort();
}

/**
 * Why a test failed, in one line: the first non-empty line of its first failure message (colour codes removed,
 * at most 240 characters) and the first stack frame in a test file, relative to `show`. Undefined when the
 * report carries no message.
 */
export function reasonOf(messages, show) {
  const text = (Array.isArray(messages) ? messages : []).find((m) => typeof m === 'string' && m.trim() !== '');
  if (text === undefined) return undefined;
  // eslint-disable-next-line no-control-regex
  const lines = text.replace(/\u001b\[[0-9;]*m/g, '').split('\n');
  let head = (lines.find((l) => l.trim() !== '') ?? '').trim();
  if (head.length > 240) head = `${head.slice(0, 239)}…`;
  for (const line of lines) {
    const m = /((?:\/|file:\/\/)[^\s()]*\.test\.[cm]?[jt]s):(\d+)/.exec(line);
    if (m !== null) return `${head} (${show(m[1].replace(/^file:\/\//, ''))}:${m[2]})`;
  }
  return head;
}

function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * Counts a run. `report` is the parsed JSON report (or an Error when it could not be read), `verdict` the
 * parsed verdict (or an Error), `projects` the expected project directories (or an Error), `root` the
 * directory file names are shown relative to, `exitCode` the test command's exit status (or undefined).
 * Returns the "failed: …" lines, the counts, and the exit code of the summary.
 */
export function summarize({ report, verdict, projects, root, exitCode }) {
  const failures = [];
  const fail = (line) => failures.push(line);
  const show = (p) => {
    if (typeof p !== 'string' || p === '') return '(no file)';
    const r = relative(root, resolve(root, p));
    return r.startsWith('..') ? p : r.split(sep).join('/');
  };

  let passed = 0;
  let skipped = 0;
  const files = [];
  if (report instanceof Error) {
    fail(`the test report: ${report.message}`);
  } else {
    for (const file of report.testResults ?? []) {
      const tests = file.assertionResults ?? [];
      const by = (status) => tests.filter((t) => t.status === status);
      const failedTests = by('failed');
      const pending = by('pending');
      const notRun = [...by('skipped'), ...by('todo')];
      const name = show(file.name);
      files.push(name);
      passed += by('passed').length;
      for (const t of failedTests) {
        const why = reasonOf(t.failureMessages, show);
        fail(`${name} > ${t.fullName ?? t.title ?? '(unnamed test)'}${why === undefined ? '' : ` — ${why}`}`);
      }
      if (pending.length > 0) {
        fail(`${name}: ${plural(pending.length, 'test')} never finished (its worker died or the run was cut short)`);
      }
      if (file.status === 'failed' && failedTests.length === 0 && pending.length === 0) {
        const reasons = verdict instanceof Error ? [] : (verdict.fileErrors ?? []).filter((e) => show(e.file) === name);
        const why =
          reasons.length > 0
            ? reasons.map((e) => (e.suite ? `in "${e.suite}": ${e.message}` : e.message)).join('; ')
            : file.message || 'no message in the report';
        const stopped = notRun.length > 0 ? `; ${plural(notRun.length, 'test')} did not run` : '';
        fail(`${name}: failed outside its tests (a hook, its import, or no test in it): ${why}${stopped}`);
      } else {
        skipped += notRun.length;
      }
    }
    if (report.success === false && failures.length === 0) {
      fail('vitest reported "success": false, and its report names no failing test or file');
    }
  }

  if (verdict instanceof Error) {
    fail(`the verdict (unhandled errors, file and suite errors): ${verdict.message}`);
  } else {
    for (const e of verdict.unhandledErrors ?? []) {
      const where = e.file ? ` in ${show(e.file)}${e.test ? ` (last test: "${e.test}")` : ''}` : '';
      fail(`${e.type ?? 'Unhandled Error'}${where}: ${e.name ?? 'Error'}: ${e.message}`);
    }
    for (const p of verdict.projects ?? []) {
      if (p.files === 0) fail(`project ${p.name} (${p.root}): no test file ran (does its include pattern match anything?)`);
    }
    if (verdict.reason !== 'passed' && failures.length === 0) {
      fail(`vitest ended the run as "${String(verdict.reason)}" and names no failure`);
    }
  }

  if (projects instanceof Error) {
    fail(`the expected projects: ${projects.message}`);
  } else if (!(report instanceof Error)) {
    const reported = new Set(verdict instanceof Error ? [] : (verdict.projects ?? []).filter((p) => p.files === 0).map((p) => p.root));
    for (const dir of projects) {
      if (reported.has(dir)) continue; // already counted from the verdict
      if (!files.some((f) => f.startsWith(`${dir}/`))) fail(`project ${dir}: no test file of it in the report`);
    }
  }

  const failedTests = report instanceof Error ? 0 : (report.testResults ?? []).flatMap((f) => f.assertionResults ?? []).filter((t) => t.status === 'failed').length;
  if (!(report instanceof Error) && passed + failedTests === 0) fail('no test was executed');

  if (exitCode !== undefined && exitCode !== 0 && failures.length === 0) {
    fail(`the test command exited ${exitCode}, and nothing in its report explains it`);
  }

  const failed = failures.length;
  return {
    lines: [...failures.map((f) => `failed: ${f}`), `${passed} passed, ${failed} failed, ${skipped} skipped`],
    passed,
    failed,
    skipped,
    exitCode: failed > 0 ? 1 : 0,
  };
}

function readJson(file, what) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const code = err && typeof err === 'object' && 'code' in err ? ` (${err.code})` : '';
    return new Error(`cannot read ${what} ${file}${code}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function parseArgs(argv) {
  const opts = { report: undefined, verdict: undefined, config: join(REPO_ROOT, 'vitest.config.ts'), exitCode: undefined, also: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--verdict') opts.verdict = value();
    else if (a === '--config') opts.config = value();
    else if (a === '--also') opts.also.push({ report: value(), exitCode: undefined });
    else if (a === '--also-exit-code') {
      const v = value();
      const last = opts.also.at(-1);
      if (last === undefined) throw new Error('--also-exit-code follows an --also <report.json>');
      if (!/^\d+$/.test(v)) throw new Error(`--also-exit-code takes a number, not ${v}`);
      last.exitCode = Number(v);
    } else if (a === '--exit-code') {
      const v = value();
      if (!/^\d+$/.test(v)) throw new Error(`--exit-code takes a number, not ${v}`);
      opts.exitCode = Number(v);
    } else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else if (opts.report === undefined) opts.report = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (opts.report === undefined) throw new Error('the report file is required');
  opts.verdict ??= verdictPathFor(opts.report);
  return opts;
}

function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`vitest-summary: ${err instanceof Error ? err.message : String(err)}`);
    console.error('usage: vitest-summary.mjs <report.json> [--verdict <file>] [--config <vitest.config.ts>] [--exit-code <n>] [--also <report.json> [--also-exit-code <n>]]...');
    process.exit(2);
  }
  let projects;
  try {
    projects = expectedProjects(opts.config);
  } catch (err) {
    projects = new Error(`${opts.config}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const result = summarize({
    report: readJson(opts.report, 'the test report'),
    verdict: readJson(opts.verdict, 'the verdict'),
    projects,
    root: dirname(resolve(opts.config)),
    exitCode: opts.exitCode,
  });
  const runs = [result];
  for (const also of opts.also) {
    runs.push(
      summarize({
        report: readJson(also.report, 'the test report'),
        verdict: readJson(verdictPathFor(also.report), 'the verdict'),
        projects: [],
        root: dirname(resolve(opts.config)),
        exitCode: also.exitCode,
      }),
    );
  }
  // Every run's "failed: …" lines, then one summary line over all runs.
  for (const run of runs) for (const line of run.lines.slice(0, -1)) console.log(line);
  const total = (key) => runs.reduce((n, run) => n + run[key], 0);
  console.log(`${total('passed')} passed, ${total('failed')} failed, ${total('skipped')} skipped`);
  process.exit(runs.some((run) => run.exitCode !== 0) ? 1 : 0);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
