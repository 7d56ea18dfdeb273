import Table from 'cli-table3';
import { type Colors, COMPACT_CHARS, PLAIN_TABLE_STYLE } from '../lib/output.js';
import type { MatrixReport } from './run.js';
import { CELLS, MATRIX_SCENARIOS } from './scenarios.js';

/** The matrix as text: one row per measured path, one column per scenario, ✓/✗ in every cell. */
export function renderMatrix(report: MatrixReport, c: Colors): string {
  const out: string[] = [];
  const scenarios = MATRIX_SCENARIOS.map((s) => s.id);
  const table = new Table({
    head: ['measured path', ...scenarios].map((h) => c.bold(h)),
    style: PLAIN_TABLE_STYLE,
    chars: COMPACT_CHARS,
  });
  for (const spec of CELLS) {
    if (!report.artifacts.includes(spec.artifact)) continue;
    const row: string[] = [spec.label];
    for (const id of scenarios) {
      const cell = report.cells.find((x) => x.scenario === id && x.cell === spec.id);
      if (cell === undefined) {
        row.push('');
        continue;
      }
      row.push(
        cell.ok
          ? c.green(`✓ ${cell.expected}`)
          : c.red(`✗ ${cell.measured ?? 'none'} (want ${cell.expected})`),
      );
    }
    table.push(row);
  }
  out.push(table.toString());
  out.push('cells read "✓ measured" when lstat matches docs/permissions.md, "✗ measured (want expected)" otherwise');
  for (const s of report.scenarios) {
    out.push(`  ${s.id}: ${s.title}`);
  }
  for (const n of report.notes) out.push(`  ${n.artifact}: ${n.note}`);

  const failedCells = report.cells.filter((x) => !x.ok);
  for (const f of failedCells) {
    out.push(c.red(`✗ ${f.scenario} ${f.cell}: measured ${f.measured ?? 'nothing'}, expected ${f.expected}${f.error === null ? '' : ` — ${f.error}`}`));
  }

  out.push('');
  if (report.crossUid.ran) {
    const users = report.crossUid.users.map((u) => `${u.name} (uid ${u.uid})`).join(', ');
    out.push(`cross-uid (real users ${users}, group ${report.crossUid.group ?? '?'}; created and removed by this run)`);
    const xt = new Table({
      head: ['scenario', 'what', 'expected', 'outcome'].map((h) => c.bold(h)),
      style: PLAIN_TABLE_STYLE,
      chars: COMPACT_CHARS,
      colWidths: [10, 46, 18, 22],
      wordWrap: true,
    });
    for (const r of report.crossUid.rows) {
      xt.push([r.scenario, r.description, r.expected, r.ok ? c.green(`✓ ${r.outcome}`) : c.red(`✗ ${r.outcome}`)]);
    }
    out.push(xt.toString());
    for (const r of report.crossUid.rows) out.push(`  ${r.scenario}: ${r.detail}`);
  } else {
    out.push(c.dim(`cross-uid rows skipped: ${report.crossUid.skipped ?? 'not requested'}`));
  }
  out.push('');
  const verdict = report.ok
    ? c.green(`✓ all ${report.summary.cells} cells match docs/permissions.md`)
    : c.red(`✗ ${report.summary.failed} of ${report.summary.cells} cells differ from docs/permissions.md`);
  const cross = report.crossUid.ran
    ? report.summary.crossUidFailed === 0
      ? `, cross-uid ${report.crossUid.rows.length}/${report.crossUid.rows.length} ✓`
      : c.red(`, cross-uid ${report.summary.crossUidFailed} ✗`)
    : '';
  out.push(`${verdict}${cross} (${(report.durationMs / 1000).toFixed(1)} s)`);
  return out.join('\n');
}
