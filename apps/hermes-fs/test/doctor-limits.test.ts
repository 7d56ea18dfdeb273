/**
 * No silent limits in the doctor (issue #23 row 12): a tree deeper than the audit walks is a `too-deep`
 * finding naming the directory where the walk stopped, in the text and the JSON report; a stale temp below
 * the spool's first level is reported and swept by --fix like any other.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../src/index.js';
import { cleanupHomes, cli, cliJson, freshHome } from './helpers.js';

afterAll(cleanupHomes);

describe('row 12: the doctor says where its walk stopped', () => {
  it('row 12: a 300-level tree under pending_messages/ with a stale temp at depth 100 and a 0644 payload at depth 280: too-deep reported with the path; the temp swept', () => {
    const home = freshHome();
    const spool = path.join(home, 'pending_messages');
    const dir = (n: number): string => path.join(spool, ...Array<string>(n).fill('d'));
    fs.mkdirSync(dir(300), { recursive: true, mode: 0o700 });
    fs.chmodSync(home, 0o700);
    const temp = path.join(dir(100), '.x.json.999999-1.0123456789ab.tmp');
    fs.writeFileSync(temp, '{"partial":', { mode: 0o600 });
    const old = new Date(Date.now() - 2 * 3_600_000);
    fs.utimesSync(temp, old, old);
    const payload = path.join(dir(280), 'f.json');
    fs.writeFileSync(payload, '{}');
    fs.chmodSync(payload, 0o644);
    const stoppedAt = dir(256);

    const { run, json } = cliJson<DoctorReport>(['doctor', '--home', home, '--unmanaged'], { env: {} });
    const tooDeep = json.findings.filter((f) => f.type === 'too-deep');
    const temps = json.findings.filter((f) => f.type === 'temp-file');
    const text = cli(['doctor', '--home', home, '--unmanaged'], { env: { NO_COLOR: '1' } });
    const fixed = cliJson<DoctorReport>(['doctor', '--home', home, '--unmanaged', '--fix'], { env: {} });
    const removed = fixed.json.fix.changes.filter((c) => c.action === 'removed').map((c) => c.path);
    console.log(
      `row 12: doctor on 300 levels: ${String(json.scanned.directories)} directories audited, too-deep ${String(tooDeep.length)} at ${path.relative(home, tooDeep[0]?.path ?? '').split('/').length.toString()} levels, ` +
        `stale temps reported ${String(temps.length)}, removed by --fix ${String(removed.length)}, too-deep after --fix ${String(fixed.json.findings.filter((f) => f.type === 'too-deep').length)}`,
    );
    expect(run.status, run.stderr).toBe(1);
    expect(tooDeep.map((f) => [f.path, f.severity, f.fixable])).toEqual([[stoppedAt, 'warning', false]]);
    expect(tooDeep[0]?.problem).toBe('directory 257 levels below the home, deeper than the 256 the doctor walks: nothing in it was audited, and no leftover temp file in it is reported or swept');
    expect(temps.map((f) => [f.path, f.fixable])).toEqual([[temp, true]]);
    expect(text.stdout).toContain('too-deep');
    expect(removed).toEqual([temp]);
    expect(fs.existsSync(temp)).toBe(false);
    expect(fixed.json.findings.filter((f) => f.type === 'too-deep').map((f) => f.path)).toEqual([stoppedAt]);
  }, 120_000);
});
