/**
 * Everything the tools leave is visible (#25 item 5): incomplete spool temps (this package's and the Python
 * reference's) are shown by the command the doctor's hint names, `doctor --fix` moves them aside as `.partial`,
 * and afterwards the doctor still reports them (with the command that lists them), `pending list` shows them
 * and `pending prune` removes them — a dry run unless --yes. A reference temp outside the spool gets a hint that
 * really shows it (no hermes-fs command lists it).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupHomes, cli, cliJson, freshHome, seedHome } from './helpers.js';

afterAll(cleanupHomes);

interface DoctorJson {
  findings: { type: string; severity: string; path: string; kind: string | null; problem: string; fix: string; fixable: boolean }[];
  fix: { changes: { type: string; path: string; action: string; detail: string }[] };
}
interface ListJson {
  entries: { name: string; kind: string }[];
  totals: { files: number; kinds: Record<string, number> };
}

const OURS_TEXT = '{"session_key":"agent:x:cli:1","messa'; // 37 bytes, cut mid-write
const PY_TEXT = '{"kind":"pending","sess'; // 23 bytes

describe('temps and .partial files: visible to doctor, pending list and prune', () => {
  let home: string;
  let spool: string;
  let ours: string;
  let py: string;
  let outside: string;

  beforeAll(() => {
    home = freshHome();
    seedHome(home);
    spool = path.join(home, 'pending_messages');
    const ns = /\[(\d+)\]/.exec(fs.readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
    ours = path.join(spool, `.pending-aaaabbbbccccddddeeeeffff00001111.json.999999-${ns}.0123456789ab.tmp`);
    py = path.join(spool, '.pending-11112222333344445555666677778888_ab12cd34.tmp');
    outside = path.join(home, 'sessions', 'saved', '.notes_zz12ab34.tmp');
    const old = new Date(Date.now() - 3 * 3_600_000);
    for (const [p, text] of [
      [ours, OURS_TEXT],
      [py, PY_TEXT],
      [outside, 'draft'],
    ] as const) {
      fs.writeFileSync(p, text, { mode: 0o600 });
      fs.utimesSync(p, old, old);
    }
  });

  it('before --fix: the hint of a reference temp in the spool names pending list, which shows it; one outside names ls', () => {
    const { json } = cliJson<DoctorJson>(['doctor', '--home', home]);
    const foreign = json.findings.filter((f) => f.type === 'foreign-temp');
    expect(foreign.map((f) => [path.relative(home, f.path), f.kind, f.fixable])).toEqual([
      ['pending_messages/.pending-11112222333344445555666677778888_ab12cd34.tmp', 'pending-messages', true],
      ['sessions/saved/.notes_zz12ab34.tmp', null, false],
    ]);
    expect(foreign[0]?.fix).toContain(`see them with: hermes-fs pending list --home ${home}`);
    expect(foreign[1]?.fix).toBe(`inspect it: ls -l ${outside}; head -c 2000 ${outside}; then, once nothing in it is needed: rm ${outside}`);
    // The hint's command really shows both spool temps.
    const list = cliJson<ListJson>(['pending', 'list', '--home', home]);
    const names = list.json.entries.map((e) => e.name);
    console.log(`before --fix: foreign-temp findings ${String(foreign.length)}, pending list entries ${String(names.length)}`);
    expect(names).toContain(path.basename(py));
    expect(names).toContain(path.basename(ours));
  });

  it('after --fix: both moved aside as .partial; the doctor reports them with the command that lists them', () => {
    const fixed = cliJson<DoctorJson>(['doctor', '--fix', '--home', home]);
    const salvaged = fixed.json.fix.changes.filter((c) => c.action === 'salvaged').map((c) => path.basename(c.path)).sort();
    expect(salvaged).toEqual([path.basename(py), path.basename(ours)].sort());
    const { run, json } = cliJson<DoctorJson>(['doctor', '--home', home]);
    const partial = json.findings.filter((f) => f.type === 'temp-file');
    console.log(`after --fix: salvaged ${String(salvaged.length)}, temp-file findings ${String(partial.length)}, exit ${String(run.status)}`);
    expect(partial).toEqual([
      {
        type: 'temp-file',
        severity: 'info',
        path: spool,
        kind: 'pending-messages',
        problem: '2 incomplete writes moved aside as .partial (60 B): no complete message in them; kept until gateway.pending.bad_retention_days (30) has passed',
        fix: `hermes-fs pending list --home ${home}   (kind "partial"); then hermes-fs pending prune --home ${home}   (a dry run; --yes deletes those past the retention)`,
        fixable: false,
      },
    ]);
    const list = cliJson<ListJson>(['pending', 'list', '--home', home]);
    expect(list.json.totals.kinds.partial).toBe(2);
    expect(list.json.entries.filter((e) => e.kind === 'partial').map((e) => e.name).sort()).toEqual([
      'pending-11112222333344445555666677778888_ab12cd34.tmp.partial',
      `${path.basename(ours).slice(1)}.partial`,
    ].sort());
    const text = cli(['pending', 'list', '--home', home], { env: { NO_COLOR: '1', COLUMNS: '200' } });
    expect(text.stdout).toContain('2 partial (incomplete writes)');
  });

  it('prune: a dry run lists the .partial files and deletes nothing; --yes deletes them; the doctor is then silent', () => {
    const partials = (): string[] => fs.readdirSync(spool).filter((n) => n.includes('.partial')).sort();
    const dry = cli(['pending', 'prune', '--older-than', '0', '--home', home], { env: { NO_COLOR: '1', COLUMNS: '200' } });
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('would delete partial   pending-11112222333344445555666677778888_ab12cd34.tmp.partial');
    expect(dry.stdout).toContain('dry run: would delete 2 spool files');
    expect(partials()).toHaveLength(2);
    const real = cli(['pending', 'prune', '--older-than', '0', '--yes', '--home', home]);
    expect(real.status, real.stderr).toBe(0);
    const { json } = cliJson<DoctorJson>(['doctor', '--home', home]);
    console.log(`prune: dry run kept ${String(2)}, after --yes ${String(partials().length)} left, doctor temp-file findings ${String(json.findings.filter((f) => f.type === 'temp-file').length)}`);
    expect(partials()).toEqual([]);
    expect(json.findings.filter((f) => f.type === 'temp-file')).toEqual([]);
  });
});
