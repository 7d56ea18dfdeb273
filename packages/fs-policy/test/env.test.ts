import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lastJson, runNode, tempRoot } from '@hermes/test-utils';
import {
  detectManaged,
  interpretManagedValue,
  loadEnvironment,
  parseHomeMode,
  parseId,
  profileHome,
  resolveHermesHome,
  setLogger,
  silentLogger,
} from '../src/index.js';

setLogger(silentLogger);

/** The valid class, restated from docs/permissions.md and the fs-policy README independently of the implementation. */
function isValidMode(v: number): boolean {
  return v >= 0 && v <= 0o7777 && (v & 0o700) === 0o700 && (v & 0o4000) === 0 && (v & 0o1000) === 0;
}

describe('HERMES_HOME_MODE parsing', () => {
  it('accepts the documented spellings', () => {
    expect(parseHomeMode('0701')).toEqual({ mode: 0o701, source: 'env', warnings: [], rejected: false });
    expect(parseHomeMode('701').mode).toBe(0o701);
    expect(parseHomeMode('0o701').mode).toBe(0o701);
    expect(parseHomeMode(' 0750 ').mode).toBe(0o750);
    expect(parseHomeMode('02770').mode).toBe(0o2770);
    expect(parseHomeMode(undefined)).toEqual({ mode: 0o700, source: 'default', warnings: [], rejected: false });
    expect(parseHomeMode('   ')).toEqual({ mode: 0o700, source: 'default', warnings: [], rejected: false });
  });

  it('rejects each invalid class with a warning and the safe default', () => {
    const cases: [string, string][] = [
      ['abc', 'not an octal mode'],
      ['8', 'not an octal mode'],
      ['0x1C0', 'not an octal mode'],
      ['7_00', 'not an octal mode'],
      ['-1', 'negative'],
      ['77777777', 'out of range'],
      ['99999999999999999999', 'not an octal mode'],
      ['777777777777777777777777', 'out of range'],
      ['0', 'owner must keep rwx'],
      ['0600', 'owner must keep rwx'],
      ['4700', 'setuid'],
      ['1700', 'sticky'],
    ];
    for (const [raw, why] of cases) {
      const r = parseHomeMode(raw);
      expect(r.mode, raw).toBe(0o700);
      expect(r.rejected, raw).toBe(true);
      expect(r.source, raw).toBe('default');
      expect(r.warnings, raw).toHaveLength(1);
      expect(r.warnings[0], raw).toContain(why);
    }
  });

  it('accepts group/other write with a warning', () => {
    const r = parseHomeMode('0777');
    expect(r.mode).toBe(0o777);
    expect(r.rejected).toBe(false);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toContain('group/other write');
    expect(parseHomeMode('0711').warnings).toEqual([]);
  });

  it('property: never throws on any string, and the result is either the default or a valid mode', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (raw) => {
        const r = parseHomeMode(raw);
        if (r.rejected) {
          expect(r.mode).toBe(0o700);
          expect(r.warnings.length).toBe(1);
        } else {
          expect(isValidMode(r.mode)).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('property: accepts exactly the valid class, in every spelling', () => {
    fc.assert(
      fc.property(fc.integer({ min: -0o20000, max: 0o20000 }), fc.constantFrom('', '0', '0o', '0O'), (v, prefix) => {
        const raw = v < 0 ? `-${prefix}${(-v).toString(8)}` : `${prefix}${v.toString(8)}`;
        const r = parseHomeMode(raw);
        expect(r.rejected).toBe(!isValidMode(v));
        if (!r.rejected) {
          expect(r.mode).toBe(v);
          expect(r.warnings.length).toBe((v & 0o022) === 0 ? 0 : 1);
        }
      }),
      { numRuns: 5000 },
    );
  });
});

describe('managed detection', () => {
  const home = tempRoot();
  const marker = path.join(home, '.managed');

  it('applies one vocabulary', () => {
    const table: [string, boolean, string | null][] = [
      ['brew', false, null],
      ['Homebrew', false, null],
      ['false', false, null],
      ['0', false, null],
      ['no', false, null],
      ['OFF', false, null],
      ['', true, 'nixos'],
      ['true', true, 'nixos'],
      ['1', true, 'nixos'],
      ['yes', true, 'nixos'],
      ['on', true, 'nixos'],
      ['NixOS', true, 'nixos'],
      ['home-manager', true, 'home-manager'],
      ['apt', true, 'apt'],
    ];
    for (const [value, managed, system] of table) {
      expect(interpretManagedValue(value), value).toEqual({ managed, system });
    }
  });

  it('env wins over the marker; the marker decides when env is blank; result names the source', () => {
    fs.rmSync(marker, { force: true });
    expect(detectManaged(home, {})).toEqual({ managed: false, system: null, source: 'none', raw: null, marker: 'absent', warnings: [] });
    fs.writeFileSync(marker, '\uFEFFhome-manager\n');
    expect(detectManaged(home, {})).toEqual({ managed: true, system: 'home-manager', source: 'marker', raw: '\uFEFFhome-manager\n', marker: 'trusted', warnings: [] });
    expect(detectManaged(home, { HERMES_MANAGED: 'false' })).toEqual({ managed: false, system: null, source: 'env', raw: 'false', marker: 'unread', warnings: [] });
    expect(detectManaged(home, { HERMES_MANAGED: '  ' }).source).toBe('marker');
    fs.writeFileSync(marker, '');
    expect(detectManaged(home, {})).toEqual({ managed: true, system: 'nixos', source: 'marker', raw: '', marker: 'trusted', warnings: [] });
  });
});

describe('home resolution and ids', () => {
  it('expands ~, makes the path absolute and normalises it', () => {
    expect(resolveHermesHome({ HOME: '/home/ann', HERMES_HOME: '~/h' })).toBe('/home/ann/h');
    expect(resolveHermesHome({ HOME: '/home/ann' })).toBe('/home/ann/.hermes');
    expect(resolveHermesHome({ HOME: '/home/ann', HERMES_HOME: '  /srv//hermes/./x/../y ' })).toBe('/srv/hermes/y');
    expect(resolveHermesHome({ HOME: '/home/ann', HERMES_HOME: 'rel' })).toBe(path.join(process.cwd(), 'rel'));
    expect(resolveHermesHome({ HOME: '/home/ann', HERMES_HOME: '/h' }, { profile: 'work' })).toBe('/h/profiles/work');
  });

  it('refuses profile names that could leave the profiles directory', () => {
    for (const bad of ['..', '../x', 'a/b', '.hidden', '', 'x'.repeat(65)]) {
      expect(() => profileHome('/h', bad), bad).toThrow(/invalid profile name/);
    }
  });

  it('parses HERMES_UID/HERMES_GID as non-negative integers only', () => {
    expect(parseId('1000', 'HERMES_UID')).toEqual({ value: 1000 });
    expect(parseId(' 0 ', 'HERMES_UID')).toEqual({ value: 0 });
    expect(parseId(undefined, 'HERMES_UID')).toEqual({ value: undefined });
    for (const bad of ['-1', 'abc', '1.5', '99999999999']) {
      expect(parseId(bad, 'HERMES_GID').value, bad).toBeUndefined();
      expect(parseId(bad, 'HERMES_GID').warning, bad).toContain('HERMES_GID');
    }
  });

  it('loadEnvironment turns bad values into warnings, never a throw', () => {
    const env = loadEnvironment({ home: os.tmpdir(), env: { HERMES_HOME_MODE: '9999', HERMES_UID: 'x', HERMES_MANAGED: 'no' } });
    expect(env.homeMode.mode).toBe(0o700);
    expect(env.uid).toBeUndefined();
    expect(env.warnings).toHaveLength(2);
  });

  it('reads the umask of the process without changing it', () => {
    const probe = path.join(tempRoot(), 'probe.mjs');
    fs.writeFileSync(
      probe,
      `import { readUmask } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};\n` +
        `const a = readUmask(); const b = readUmask({ fresh: true });\n` +
        `const status = (await import('node:fs')).readFileSync('/proc/self/status', 'utf8').match(/Umask:\\s*(\\d+)/)[1];\n` +
        `console.log(JSON.stringify({ a, b, status }));\n`,
    );
    for (const [mask, text] of [[0o022, '0022'], [0o077, '0077'], [0o007, '0007']] as const) {
      const r = lastJson<{ a: number; b: number; status: string }>(runNode(probe, [], { umask: mask }));
      expect(r).toEqual({ a: mask, b: mask, status: text });
    }
  });
});
