import { SQLITE_UNAVAILABLE_FIX } from '@hermes/session-db';
import { type Colors, count } from '../lib/output.js';
import { type Cell, renderTable } from '../lib/table.js';
import { termSafe, wrapLine } from '../lib/term.js';
import type { MatrixCell, MatrixReport } from './run.js';
import { CELLS, MATRIX_SCENARIOS, type MatrixArtifact, type ScenarioId } from './scenarios.js';

/** An error that says the native SQLite module could not be loaded (a missing or mismatched build). */
const NATIVE_MODULE = /better[_-]sqlite3|NODE_MODULE_VERSION|bindings file|\.node\b/i;

function cellText(cell: MatrixCell): string {
  if (cell.ok) return `✓ ${cell.expected}`;
  if (cell.measured === null) return cell.error === null ? '✗ none' : '✗ error';
  return `✗ ${cell.measured} (want ${cell.expected})`;
}

/** Scenario ids as a short list: `S1–S5`, `S1, S3`. */
function scenarioList(ids: readonly ScenarioId[]): string {
  const all = MATRIX_SCENARIOS.map((s) => s.id);
  if (ids.length === all.length) return `${all[0] ?? ''}–${all[all.length - 1] ?? ''}`;
  return ids.join(', ');
}

interface ErrorGroup {
  readonly artifact: MatrixArtifact;
  readonly error: string;
  readonly scenarios: ScenarioId[];
}

/**
 * Failures that produced nothing to measure, one group per (artifact, error): the cause is printed once,
 * however many cells it emptied (a missing native module empties all 15 state-db cells).
 */
function errorGroups(report: MatrixReport): ErrorGroup[] {
  const groups = new Map<string, ErrorGroup>();
  for (const cell of report.cells) {
    if (cell.ok || cell.measured !== null || cell.error === null) continue;
    const key = `${cell.artifact}\u0000${cell.error}`;
    const g = groups.get(key) ?? { artifact: cell.artifact, error: cell.error, scenarios: [] };
    if (!g.scenarios.includes(cell.scenario)) g.scenarios.push(cell.scenario);
    groups.set(key, g);
  }
  return [...groups.values()];
}

/** Artifacts none of whose cells produced a mode, in any scenario: their rows say nothing the error line does not. */
function unwritten(report: MatrixReport): Set<MatrixArtifact> {
  const out = new Set<MatrixArtifact>();
  for (const artifact of report.artifacts) {
    const cells = report.cells.filter((c) => c.artifact === artifact);
    if (cells.length > 0 && cells.every((c) => c.measured === null && c.error !== null)) out.add(artifact);
  }
  return out;
}

/** The matrix as text, within `width` columns: one row per measured path, one column per scenario, ✓/✗ in every cell. */
export function renderMatrix(report: MatrixReport, c: Colors, width = 80): string {
  const out: string[] = [];
  const scenarios = MATRIX_SCENARIOS.map((s) => s.id);
  const skip = unwritten(report);
  const rows: Cell[][] = [];
  for (const spec of CELLS) {
    if (!report.artifacts.includes(spec.artifact) || skip.has(spec.artifact)) continue;
    const row: Cell[] = [{ text: spec.label }];
    for (const id of scenarios) {
      const cell = report.cells.find((x) => x.scenario === id && x.cell === spec.id);
      row.push(cell === undefined ? { text: '' } : { text: cellText(cell), paint: cell.ok ? c.green : c.red });
    }
    rows.push(row);
  }
  if (rows.length > 0) {
    out.push(
      ...renderTable(
        [{ header: 'measured path', overflow: 'wrap', min: 14 }, ...scenarios.map((s) => ({ header: s, overflow: 'wrap' as const, min: 6 }))],
        rows,
        { maxWidth: width, header: c.bold },
      ),
    );
    out.push(...wrapLine('cells read "✓ measured" when lstat matches docs/permissions.md, "✗ measured (want expected)" otherwise', width, '  '));
  }
  for (const s of report.scenarios) out.push(...wrapLine(`  ${s.id}: ${s.title}`, width, '      '));
  for (const n of report.notes) out.push(...wrapLine(`  ${n.artifact}: ${termSafe(n.note)}`, width, '      '));

  for (const f of report.cells.filter((x) => !x.ok && x.measured !== null)) {
    const line = `✗ ${f.scenario} ${f.cell}: measured ${f.measured ?? 'nothing'}, expected ${f.expected}${f.error === null ? '' : ` — ${termSafe(f.error)}`}`;
    out.push(...wrapLine(line, width, '    ').map((l) => c.red(l)));
  }
  let native = false;
  for (const g of errorGroups(report)) {
    const what = skip.has(g.artifact) ? `${g.artifact}: not written in any scenario` : `${g.artifact}: not written in ${scenarioList(g.scenarios)}`;
    out.push(...wrapLine(`✗ ${what}: ${termSafe(g.error)}`, width, '    ').map((l) => c.red(l)));
    // session-db's ESQLITE_UNAVAILABLE line carries its fix already; an older or foreign text gets it here.
    native ||= NATIVE_MODULE.test(g.error) && !g.error.startsWith('ESQLITE_UNAVAILABLE');
  }
  if (native) {
    out.push(
      ...wrapLine(
        `  the native SQLite module (better-sqlite3) could not be loaded for this Node version: ${SQLITE_UNAVAILABLE_FIX}`,
        width,
        '    ',
      ),
    );
  }

  out.push('');
  if (report.crossUid.ran) {
    const users = report.crossUid.users.map((u) => `${u.name} (uid ${u.uid})`).join(', ');
    out.push(...wrapLine(`cross-uid (real users ${users}, group ${report.crossUid.group ?? '?'}; created and removed by this run)`, width, '  '));
    out.push(
      ...renderTable(
        [
          { header: 'scenario' },
          { header: 'what', overflow: 'wrap', min: 16 },
          { header: 'expected', overflow: 'wrap', min: 8 },
          { header: 'outcome', overflow: 'wrap', min: 9 },
        ],
        report.crossUid.rows.map((r) => [
          { text: r.scenario },
          { text: r.description },
          { text: r.expected },
          { text: `${r.ok ? '✓' : '✗'} ${r.outcome}`, paint: r.ok ? c.green : c.red },
        ]),
        { maxWidth: width, header: c.bold },
      ),
    );
    for (const r of report.crossUid.rows) out.push(...wrapLine(`  ${r.scenario}: ${termSafe(r.detail)}`, width, '      '));
  } else {
    out.push(...wrapLine(`cross-uid rows skipped: ${report.crossUid.skipped ?? 'not requested'}`, width, '  ').map((l) => c.dim(l)));
  }
  if (report.crossUid.leftover.length > 0) {
    const left = report.crossUid.leftover;
    const cmds = left.map((l) => (l.startsWith('user ') ? `userdel ${l.slice(5)}` : `groupdel ${l.slice(6)}`)).join('; ');
    out.push(...wrapLine(`✗ could not remove the throwaway ${left.join(', ')}: remove by hand: ${cmds}`, width, '    ').map((l) => c.red(l)));
  }
  out.push('');
  const verdict =
    report.summary.failed === 0
      ? c.green(`✓ all ${count(report.summary.cells)} cells match docs/permissions.md`)
      : c.red(`✗ ${count(report.summary.failed)} of ${count(report.summary.cells)} cells differ from docs/permissions.md`);
  const cross = report.crossUid.ran
    ? report.summary.crossUidFailed === 0
      ? `, cross-uid ${count(report.crossUid.rows.length)}/${count(report.crossUid.rows.length)} ✓`
      : c.red(`, cross-uid ${count(report.summary.crossUidFailed)} ✗`)
    : '';
  out.push(`${verdict}${cross} (${(report.durationMs / 1000).toFixed(1)} s)`);
  return out.join('\n');
}
