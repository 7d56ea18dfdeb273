// The CLI's consistency rules, each on the built CLI: progress that starts at once (on a pseudo-terminal),
// real ids and one number format in messages, no library log line repeating the CLI's own, tables that fit
// COLUMNS.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { itNeeds, runNode } from '@hermes/test-utils';
import { afterAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../src/lib/term.js';
import { ANSI, BIN, cli, cleanupHomes, fixture, freshHome, seedHome, spoolBulk } from './helpers.js';

afterAll(cleanupHomes);

const PIDNS = fs.readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, '$1');

/** Runs the CLI on a pseudo-terminal (`script`): stdout and stderr both reach it, as on an operator's screen. */
function onTerminal(args: readonly string[], env: Record<string, string | undefined> = {}): { status: number | null; screen: string } {
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const r = spawnSync('script', ['-qec', `${process.execPath} ${BIN} ${quoted}`, '/dev/null'], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', HERMES_HOME: undefined, COLUMNS: '100', ...env },
  });
  return { status: r.status, screen: r.stdout };
}

/** A seeded home with 1,200 more payloads in its spool (1,201 files). */
function bulkHome(): string {
  const home = freshHome();
  seedHome(home);
  spoolBulk(home, 'agent:main:telegram:dm:42', 1_200);
  return home;
}

describe('progress starts at once, with rate and time left, on a terminal only', () => {
  itNeeds(['script'], 'pending recover: the scan line first, then a bar with files/s and ETA; nothing extra in a pipe or with --json', () => {
    const home = bulkHome();
    const tty = onTerminal(['pending', 'recover', '--home', home]);
    expect(tty.status, tty.screen).toBe(0);
    const screen = tty.screen.replace(/\r/g, '');
    const scan = screen.indexOf('scanning pending_messages/ … 1,201 files\n');
    expect(scan).toBeGreaterThanOrEqual(0);
    const bar = /recovering \[=+\] 1,201\/1,201 files · ([\d,]+) files\/s · ETA 0s/.exec(screen);
    expect(bar).not.toBeNull();
    expect(screen.indexOf('recovering [')).toBeGreaterThan(scan);
    expect(screen).toContain('recovered 1,201 of 1,201 spool files');
    expect(screen).not.toMatch(/\b1201\b/);

    const piped = bulkHome();
    const p = cli(['pending', 'recover', '--home', piped]);
    expect(p.status, p.stderr).toBe(0);
    expect(p.stderr).toBe('');
    expect(p.stdout).toBe(`recovered 1,201 of 1,201 spool files into ${path.join(piped, 'state.db')}\n`);

    const jsonHome = bulkHome();
    const j = onTerminal(['pending', 'recover', '--home', jsonHome, '--json']);
    expect(j.status, j.screen).toBe(0);
    const doc = JSON.parse(j.screen.replace(/\r/g, '')) as { ok: boolean; report: { inserted: unknown[] } };
    expect(doc.ok).toBe(true);
    expect(doc.report.inserted).toHaveLength(1201);
    console.log(`progress: scan line at offset ${String(scan)}, bar rate ${bar?.[1] ?? '-'} files/s; pipe stderr ${String(p.stderr.length)} B; --json on a terminal parses (${String(doc.report.inserted.length)} inserted)`);
  });
});

describe('real ids in messages', () => {
  it('recover names each agent-history snapshot by the id pending export takes, never a placeholder', () => {
    const home = freshHome();
    const seed = seedHome(home);
    const r = runNode(fixture('spool-extra.mjs'), [home, seed.sessionId], { env: { HERMES_HOME: home } });
    expect(r.status, r.stderr).toBe(0);
    const snapshot = (JSON.parse(r.stdout.trim()) as { snapshot: string }).snapshot;
    const id = /pending-([0-9a-f]{8})[0-9a-f]{24}\.json$/.exec(snapshot)?.[1] ?? 'missing';
    const run = cli(['pending', 'recover', '--home', home], { env: { NO_COLOR: '1' } });
    expect(run.status, run.stderr).toBe(1); // the fixture's rejected row is a .bad file
    expect(run.stdout).toContain(`  1 agent-history snapshot left for you (never replayed automatically); export it with:\n    hermes-fs pending export ${id} --home ${home}\n`);
    expect(run.stdout).not.toMatch(/\bID\b/);
    // The printed command works as it is.
    const exported = cli(['pending', 'export', id, '--home', home, '--stdout']);
    expect(exported.status, exported.stderr).toBe(0);
    console.log(`ids: recover printed "pending export ${id}", which exports with exit ${String(exported.status)}`);
  });
});

describe('no duplicated log lines', () => {
  it('doctor --fix salvaging a spool temp: the change is reported once (stdout), stderr stays empty, with and without --json', () => {
    const seen: string[] = [];
    for (const json of [true, false]) {
      const home = freshHome();
      seedHome(home);
      const temp = path.join(home, 'pending_messages', `.pending-x.json.4194305-${PIDNS}.0123456789ab.tmp`);
      fs.writeFileSync(temp, '{');
      fs.chmodSync(temp, 0o600);
      const run = cli(['doctor', '--fix', '--unmanaged', '--home', home, ...(json ? ['--json'] : [])], { env: { NO_COLOR: '1' } });
      expect(run.stderr, `json=${String(json)}`).toBe('');
      if (json) {
        const doc = JSON.parse(run.stdout) as { fix: { changes: { path: string; action: string }[] } };
        expect(doc.fix.changes.filter((c) => c.path === temp).map((c) => c.action)).toEqual(['salvaged']);
      } else {
        expect(run.stdout.split('\n').filter((l) => l.includes(path.basename(temp)))).toHaveLength(1);
      }
      expect(fs.existsSync(temp)).toBe(false);
      expect(fs.readdirSync(path.dirname(temp)).filter((n) => n.endsWith('.partial'))).toHaveLength(1);
      seen.push(`${json ? '--json' : 'text'}: exit ${String(run.status)}, stderr ${String(run.stderr.length)} B`);
    }
    console.log(`log lines: doctor --fix ${seen.join('; ')}`);
  });
});

describe('tables fit COLUMNS', () => {
  it('provision registry: every line within COLUMNS at 80 and 60, every kind still named', () => {
    const json = cli(['provision', 'registry', '--json']);
    const kinds = (JSON.parse(json.stdout) as { registry: { kinds: { name: string }[] } }).registry.kinds.map((k) => k.name);
    const seen: string[] = [];
    for (const columns of [80, 60]) {
      const run = cli(['provision', 'registry'], { env: { COLUMNS: String(columns), NO_COLOR: '1' } });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).not.toMatch(ANSI);
      const widest = Math.max(...run.stdout.split('\n').map((l) => displayWidth(l)));
      expect(widest, `COLUMNS=${String(columns)}`).toBeLessThanOrEqual(columns);
      // The kind column, its wrapped pieces joined: every kind is there, whole.
      const firstColumn = run.stdout.split('\n').filter((l) => l.startsWith('│')).map((l) => (l.split('│')[1] ?? '').trim()).join('');
      for (const k of kinds) expect(firstColumn, k).toContain(k);
      seen.push(`COLUMNS=${String(columns)}: widest line ${String(widest)}`);
    }
    console.log(`provision registry: ${String(kinds.length)} kinds; ${seen.join('; ')}`);
  });
});
