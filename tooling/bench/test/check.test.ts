// bench:check's verdict and the generated block of BENCHMARKS.md, on literal runs (no benchmark is run here).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareRuns, TOLERANCE } from '../check.mjs';
import { plantedMicros } from '../harness.mjs';
import { BEGIN, END, regenerateBenchmarks } from '../results.mjs';

const row = (id: string, ratio: number, noise?: string) => ({ id, ratio, noise, target: { op: '<=', ratio: 2 } });
const mem = (id: string, value: number) => ({ id, kind: 'absolute', value, noise: 'memory', target: { op: '<', value: 100 } });
const run = (results: object[]) => ({ results });

describe('bench:check', () => {
  it('names each case whose ratio grew past its class tolerance, and only those', () => {
    const committed = run([row('B2', 5.0), row('B2b', 0.5), row('B1', 1.4, 'fsync'), mem('B4-mem', 80), row('B6', 2.0)]);
    const fresh = run([row('B2', 6.5), row('B2b', 0.6), row('B1', 2.0, 'fsync'), mem('B4-mem', 95), row('B9', 1.0)]);
    const cmp = compareRuns(committed, fresh);
    const summary = cmp.rows.map((r) => `${r.id} ${r.status} ${r.change === undefined ? '-' : (r.change * 100).toFixed(1)}`);
    console.log(`bench:check verdicts: ${summary.join(', ')}; not run: ${cmp.notRun.join(', ')}`);
    expect(TOLERANCE).toEqual({ cpu: 0.25, fsync: 0.5, memory: 0.15 });
    expect(summary).toEqual(['B2 REGRESSED 30.0', 'B2b ok 20.0', 'B1 ok 42.9', 'B4-mem REGRESSED 18.8', 'B9 no committed figure -']);
    expect(cmp.regressed.map((r) => r.id)).toEqual(['B2', 'B4-mem']);
    expect(cmp.notRun).toEqual(['B6']);
    expect(compareRuns(committed, fresh, { tolerance: 0.5 }).regressed.map((r) => r.id)).toEqual([]);
    expect(compareRuns(committed, run([row('B2', 3.0)])).rows[0]?.status).toBe('improved');
  });

  it('reads a planted regression only from its own variable, per case, and refuses one it cannot read', () => {
    expect(plantedMicros('B2', { HERMES_BENCH_PLANT: 'B2:50us' })).toBe(50);
    expect(plantedMicros('B4', { HERMES_BENCH_PLANT: 'B2:50us,B4:2ms' })).toBe(2000);
    expect(plantedMicros('B2-floor', { HERMES_BENCH_PLANT: 'B2:50us' })).toBe(0);
    expect(plantedMicros('B2', {})).toBe(0);
    expect(() => plantedMicros('B2', { HERMES_BENCH_PLANT: 'B2=50' })).toThrow('HERMES_BENCH_PLANT: cannot read "B2=50"');
  });

  it('regenerates only the block between the markers of BENCHMARKS.md, and refuses a file without them', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-bench-md-'));
    try {
      const md = path.join(dir, 'BENCHMARKS.md');
      fs.writeFileSync(md, `# B\n\nprose before\n\n${BEGIN}\nold table\n${END}\n\nprose after\n`);
      regenerateBenchmarks(`${BEGIN}\nnew table\n${END}`, md);
      expect(fs.readFileSync(md, 'utf8')).toBe(`# B\n\nprose before\n\n${BEGIN}\nnew table\n${END}\n\nprose after\n`);
      fs.writeFileSync(md, '# B\n\nno markers\n');
      expect(() => { regenerateBenchmarks('x', md); }).toThrow('the markers of the generated results are missing');
      expect(fs.readFileSync(md, 'utf8')).toBe('# B\n\nno markers\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
