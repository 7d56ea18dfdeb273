/**
 * Box tables that fit the terminal: every cell is made terminal-safe, columns that may shrink are wrapped or
 * truncated until the table fits `maxWidth`, and the work is linear in the number of cells.
 */
import { displayWidth, termSafe, truncate, wrap } from './term.js';

export interface Column {
  readonly header: string;
  readonly align?: 'left' | 'right';
  /**
   * What a cell does when the column is narrower than its text: `wrap` onto more lines, `truncate` with `…`,
   * or `keep` (the column never shrinks). Default `keep`.
   */
  readonly overflow?: 'wrap' | 'truncate' | 'keep';
  /** The narrowest a shrinking column gets (default: its header's width, at least 6). */
  readonly min?: number;
}

/** A cell: its text, and the colour to paint it with (applied after layout, so it never counts as width). */
export interface Cell {
  readonly text: string;
  readonly paint?: (s: string) => string;
}

export interface TableOptions {
  /** The widest the table may be, borders included. */
  readonly maxWidth: number;
  /** Paints the header cells (e.g. bold); identity when colour is off. */
  readonly header?: (s: string) => string;
}

const identity = (s: string): string => s;

function cellOf(c: string | Cell): Cell {
  return typeof c === 'string' ? { text: c } : c;
}

/** Column widths: natural when they fit, else the shrinking columns share what is left ("water filling"). */
function fit(columns: readonly Column[], natural: readonly number[], maxWidth: number): number[] {
  const budget = maxWidth - (1 + 3 * columns.length);
  const total = natural.reduce((a, b) => a + b, 0);
  if (total <= budget) return [...natural];
  const widths = [...natural];
  const flexible: number[] = [];
  let fixed = 0;
  columns.forEach((col, i) => {
    if ((col.overflow ?? 'keep') === 'keep') fixed += natural[i] ?? 0;
    else flexible.push(i);
  });
  flexible.sort((a, b) => (natural[a] ?? 0) - (natural[b] ?? 0));
  let remaining = budget - fixed;
  let left = flexible.length;
  for (const i of flexible) {
    const col = columns[i];
    const min = Math.min(natural[i] ?? 0, col?.min ?? Math.max(6, displayWidth(col?.header ?? '')));
    const share = Math.floor(Math.max(0, remaining) / left);
    const w = Math.max(min, Math.min(natural[i] ?? 0, share));
    widths[i] = w;
    remaining -= w;
    left--;
  }
  return widths;
}

function pad(text: string, width: number, align: 'left' | 'right'): { text: string; spaces: string; right: boolean } {
  const spaces = ' '.repeat(Math.max(0, width - displayWidth(text)));
  return { text, spaces, right: align === 'right' };
}

/** Renders the table as lines (no trailing newline). */
export function renderTable(columns: readonly Column[], rows: readonly (readonly (string | Cell)[])[], options: TableOptions): string[] {
  const header = options.header ?? identity;
  const body = rows.map((row) => columns.map((_, i) => {
    const c = cellOf(row[i] ?? '');
    return { text: termSafe(c.text), paint: c.paint ?? identity };
  }));
  const natural = columns.map((col, i) => {
    let w = displayWidth(col.header);
    for (const row of body) w = Math.max(w, displayWidth(row[i]?.text ?? ''));
    return w;
  });
  const widths = fit(columns, natural, options.maxWidth);
  const rule = (l: string, m: string, r: string): string => `${l}${widths.map((w) => '─'.repeat(w + 2)).join(m)}${r}`;
  const line = (cells: readonly { lines: string[]; paint: (s: string) => string }[], height: number): string[] => {
    const out: string[] = [];
    for (let k = 0; k < height; k++) {
      const parts = cells.map((cell, i) => {
        const p = pad(cell.lines[k] ?? '', widths[i] ?? 0, columns[i]?.align ?? 'left');
        const painted = p.text === '' ? '' : cell.paint(p.text);
        return p.right ? `${p.spaces}${painted}` : `${painted}${p.spaces}`;
      });
      out.push(`│ ${parts.join(' │ ')} │`);
    }
    return out;
  };
  const layout = (text: string, i: number): string[] => {
    const w = widths[i] ?? 0;
    const overflow = columns[i]?.overflow ?? 'keep';
    if (overflow === 'wrap') return wrap(text, w);
    if (overflow === 'truncate') return [truncate(text, w)];
    return [text];
  };
  const out = [rule('┌', '┬', '┐')];
  const heads = columns.map((col, i) => ({ lines: layout(termSafe(col.header), i), paint: header }));
  out.push(...line(heads, Math.max(...heads.map((h) => h.lines.length))));
  out.push(rule('├', '┼', '┤'));
  for (const row of body) {
    const cells = row.map((c, i) => ({ lines: layout(c.text, i), paint: c.paint }));
    out.push(...line(cells, Math.max(1, ...cells.map((c) => c.lines.length))));
  }
  out.push(rule('└', '┴', '┘'));
  return out;
}
