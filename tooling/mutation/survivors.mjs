#!/usr/bin/env node
// The mutation score of each file and every mutant that was not detected, from Stryker's JSON report(s), with
// the reason each survivor is accepted, from a reasons file. See docs/testing.md.
//
//   node tooling/mutation/survivors.mjs [--reasons FILE] [--markdown] [--check] REPORT.json [LATER.json ...]
//
// A later report overrides the earlier one mutant by mutant (same file, position, mutator and replacement):
// a run forced on the lines of the survivors after tests were added replaces their verdicts, the rest stay.
// The reasons file is JSON: { "<file>": [{ "lines": "120-140", "contains": "text on the first line",
// "mutators": ["StringLiteral"], "why": "…" }] }; `contains` must appear on the mutant's line (a reason whose
// line changed no longer applies), `mutators` is optional. --check exits 1 when a survivor has no reason.
import { readFileSync } from 'node:fs';

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);

/** @param {string[]} argv */
export function parseArgs(argv) {
  const out = { reports: [], reasons: undefined, markdown: false, check: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--reasons') out.reasons = argv[++i];
    else if (a === '--markdown') out.markdown = true;
    else if (a === '--check') out.check = true;
    else if (a === '--help' || a === '-h') out.help = true;
    else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else out.reports.push(a);
  }
  if (out.reasons === '') throw new Error('--reasons needs a file');
  return out;
}

const keyOf = (file, m) => `${file}\0${m.location.start.line}:${m.location.start.column}-${m.location.end.line}:${m.location.end.column}\0${m.mutatorName}\0${m.replacement ?? ''}`;

/**
 * Merges Stryker reports (later ones override mutant by mutant) into { file: { source, mutants } }.
 * @param {{ files: Record<string, { source: string, mutants: object[] }> }[]} reports
 */
export function merge(reports) {
  const files = new Map();
  for (const r of reports) {
    if (r === null || typeof r !== 'object' || typeof r.files !== 'object' || r.files === null) throw new Error('not a Stryker mutation report (no "files")');
    for (const [name, f] of Object.entries(r.files)) {
      let entry = files.get(name);
      if (entry === undefined) {
        entry = { source: f.source, mutants: new Map() };
        files.set(name, entry);
      } else if (entry.source !== f.source) {
        throw new Error(`${name}: the reports were made from different sources; merge only runs of the same tree`);
      }
      for (const m of f.mutants) entry.mutants.set(keyOf(name, m), m);
    }
  }
  return files;
}

/** @param {string} lines "12" or "12-20" */
function inRange(lines, line) {
  const [a, b] = String(lines).split('-').map(Number);
  return line >= a && line <= (b ?? a);
}

/** The reason a survivor is accepted, or undefined. */
export function reasonFor(reasons, file, m, sourceLines) {
  const list = Object.entries(reasons ?? {}).find(([f]) => file.endsWith(f))?.[1] ?? [];
  const line = m.location.start.line;
  for (const r of list) {
    if (!inRange(r.lines, line)) continue;
    if (r.mutators !== undefined && !r.mutators.includes(m.mutatorName)) continue;
    if (r.contains !== undefined && !(sourceLines[line - 1] ?? '').includes(r.contains)) continue;
    return r.why;
  }
  return undefined;
}

/** Per-file counts, score and survivors (each with its reason or undefined). */
export function summarize(files, reasons) {
  const out = [];
  for (const [name, f] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    const lines = f.source.split('\n');
    const counts = { Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0, other: 0 };
    const survivors = [];
    for (const m of f.mutants.values()) {
      if (m.status in counts) counts[m.status]++;
      else counts.other++;
      if (UNDETECTED.has(m.status)) {
        const line = m.location.start.line;
        survivors.push({
          line,
          column: m.location.start.column,
          status: m.status,
          mutator: m.mutatorName,
          original: (lines[line - 1] ?? '').trim(),
          replacement: String(m.replacement ?? '').replace(/\s+/g, ' '),
          why: reasonFor(reasons, name, m, lines),
        });
      }
    }
    survivors.sort((a, b) => a.line - b.line || a.column - b.column);
    const detected = [...f.mutants.values()].filter((m) => DETECTED.has(m.status)).length;
    const valid = detected + survivors.length;
    out.push({ file: name, counts, total: f.mutants.size, score: valid === 0 ? null : (100 * detected) / valid, survivors });
  }
  return out;
}

const cut = (s, n) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const cell = (s) => s.replaceAll('|', '\\|').replaceAll('`', "'");

export function render(summary, markdown) {
  const rows = [];
  for (const f of summary) {
    const c = f.counts;
    const score = f.score === null ? 'n/a' : `${f.score.toFixed(2)} %`;
    const unexplained = f.survivors.filter((s) => s.why === undefined).length;
    if (markdown) {
      rows.push(`### \`${f.file}\`: ${score}`, '');
      rows.push(`${f.total} mutants: ${c.Killed} killed, ${c.Timeout} timed out, ${c.Survived} survived, ${c.NoCoverage} without coverage; ${unexplained} survivor(s) without a reason.`, '');
      if (f.survivors.length > 0) {
        rows.push('| line | mutator | code | mutated to | why it is accepted |', '|---|---|---|---|---|');
        for (const s of f.survivors) {
          rows.push(`| ${s.line}:${s.column} | ${s.mutator}${s.status === 'NoCoverage' ? ' (no coverage)' : ''} | \`${cell(cut(s.original, 70))}\` | \`${cell(cut(s.replacement, 50))}\` | ${s.why === undefined ? '**no reason given**' : s.why.replaceAll('|', '\\|')} |`);
        }
        rows.push('');
      }
    } else {
      rows.push(`${f.file}: ${score} (${f.total} mutants: ${c.Killed} killed, ${c.Timeout} timed out, ${c.Survived} survived, ${c.NoCoverage} no coverage; ${unexplained} without a reason)`);
      for (const s of f.survivors) {
        rows.push(`  ${s.line}:${s.column} ${s.status} ${s.mutator} | ${cut(s.original, 90)} => ${cut(s.replacement, 60)}${s.why === undefined ? '' : `  [${cut(s.why, 60)}]`}`);
      }
    }
  }
  const all = summary.flatMap((f) => f.survivors);
  const detected = summary.reduce((n, f) => n + f.counts.Killed + f.counts.Timeout, 0);
  const total = detected + all.length;
  const overall = total === 0 ? 'n/a' : `${((100 * detected) / total).toFixed(2)} %`;
  rows.push(`${markdown ? '**All files**: ' : 'all files: '}${overall}, ${all.length} survivor(s), ${all.filter((s) => s.why === undefined).length} without a reason`);
  return rows.join('\n');
}

function main(argv) {
  let args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`survivors: ${err.message}\n`);
    return 2;
  }
  if (args.help || args.reports.length === 0) {
    process.stdout.write('usage: survivors.mjs [--reasons FILE] [--markdown] [--check] REPORT.json [LATER.json ...]\n');
    return args.help ? 0 : 2;
  }
  let summary;
  try {
    const reports = args.reports.map((p) => JSON.parse(readFileSync(p, 'utf8')));
    const reasons = args.reasons === undefined ? {} : JSON.parse(readFileSync(args.reasons, 'utf8'));
    summary = summarize(merge(reports), reasons);
  } catch (err) {
    process.stderr.write(`survivors: ${err.message}\n`);
    return 2;
  }
  process.stdout.write(`${render(summary, args.markdown)}\n`);
  const missing = summary.flatMap((f) => f.survivors).filter((s) => s.why === undefined).length;
  if (args.check && missing > 0) {
    process.stderr.write(`survivors: ${missing} survivor(s) without a reason\n`);
    return 1;
  }
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main(process.argv.slice(2));
