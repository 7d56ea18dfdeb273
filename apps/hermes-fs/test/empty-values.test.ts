/**
 * An empty option value is a usage error, never a default (#25 item 4): `doctor --fix --home "$H"` with `$H`
 * unset must not audit and repair the invoking user's own home.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempRoot } from '@hermes/test-utils';
import { cli } from './helpers.js';

describe('empty option values', () => {
  it('--home "" exits 2 with a hint and touches no home (not the default one either)', () => {
    // A default home that would be audited and repaired if "" fell back to it: mode 0755 must stay 0755.
    const fakeHome = tempRoot();
    const dflt = path.join(fakeHome, '.hermes');
    fs.mkdirSync(dflt, { mode: 0o755 });
    fs.chmodSync(dflt, 0o755);
    const env = { HOME: fakeHome, HERMES_HOME: '' };
    for (const args of [['doctor', '--fix', '--home', ''], ['--home', '  ', 'doctor', '--fix'], ['pending', 'list', '--home', '']]) {
      const r = cli(args, { env });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain("option '--home <dir>' argument");
      expect(r.stderr).toContain('is invalid. it is empty (a variable that is not set?); an empty --home never means the default home\n');
      expect(r.stderr).toContain('hint: add --help for usage and examples\n');
      expect(r.stdout).toBe('');
    }
    expect((fs.statSync(dflt).mode & 0o7777).toString(8)).toBe('755');
  });

  it('--json: the usage error is the error document; any other empty value (--session "") is refused the same way', () => {
    const env = { HOME: os.tmpdir() };
    const j = cli(['doctor', '--home', '', '--json'], { env });
    expect(j.status, j.stderr).toBe(2);
    const doc = JSON.parse(j.stdout) as { ok: boolean; exitCode: number; error: { code: string; message: string } };
    expect(doc.ok).toBe(false);
    expect(doc.exitCode).toBe(2);
    expect(doc.error.code).toBe('EUSAGE');
    expect(doc.error.message).toBe("option '--home <dir>' argument '' is invalid. it is empty (a variable that is not set?); an empty --home never means the default home");
    const s = cli(['save', '--session', '', '--home', tempRoot()]);
    expect(s.status, s.stderr).toBe(2);
    expect(s.stderr).toContain("option '--session <id>' argument '' is invalid. it is empty (a variable that is not set?)\n");
  });
});
