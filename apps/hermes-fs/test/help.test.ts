import { spawnSync } from 'node:child_process';
import { itNeeds } from '@hermes/test-utils';
import { afterAll, describe, expect, it } from 'vitest';
import { ANSI, BIN, cli, freshHome, seedHome, cleanupHomes } from './helpers.js';

afterAll(cleanupHomes);

const COMMANDS: readonly (readonly string[])[] = [
  [],
  ['matrix'],
  ['doctor'],
  ['save'],
  ['pending'],
  ['pending', 'list'],
  ['pending', 'show'],
  ['pending', 'recover'],
  ['pending', 'export'],
  ['pending', 'prune'],
];

describe('hermes-fs --help', () => {
  for (const cmd of COMMANDS) {
    it(`hermes-fs ${[...cmd, '--help'].join(' ')} works and shows an example`, () => {
      const r = cli([...cmd, '--help']);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(new RegExp(`^Usage: hermes-fs${cmd.length > 0 ? ` ${cmd.join(' ')}` : ''} `));
      expect(r.stdout).toContain('Examples:');
      expect(r.stdout).toMatch(/\$ (sudo )?hermes-fs /);
      expect(r.stdout).toContain('Exit codes (every command):\n  0  success\n  1  findings or failures');
      expect(r.stdout).not.toMatch(ANSI);
    });
  }

  it('leaf commands document --home and --json', () => {
    for (const cmd of COMMANDS.filter((c) => c.length > 0 && c.join(' ') !== 'pending')) {
      const r = cli([...cmd, '--help']);
      expect(r.stdout, cmd.join(' ')).toContain('--home <dir>');
      expect(r.stdout, cmd.join(' ')).toContain('--json');
    }
  });

  it('an unknown command suggests and exits 2', () => {
    const typo = cli(['docter']);
    expect(typo.status, typo.stderr).toBe(2);
    expect(typo.stderr).toContain("hermes-fs: error: unknown command 'docter'");
    expect(typo.stderr).toContain('(Did you mean doctor?)');
  });

  it('--version prints the package version', () => {
    const r = cli(['--version']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('bare commands: one rule', () => {
  // `hermes-fs` and every group without its subcommand: the help on stderr, nothing on stdout, exit 2.
  const BARE: readonly (readonly [readonly string[], string])[] = [
    [[], 'hermes-fs needs a command: matrix, doctor, pending, save, provision'],
    [['pending'], 'hermes-fs pending needs a command: list, show, recover, export, prune'],
    [['provision'], 'hermes-fs provision needs a command: tmpfiles, systemd, nixos, registry'],
  ];
  it('help on stderr, nothing on stdout, exit 2; with --json the EUSAGE document on stdout', () => {
    const seen: string[] = [];
    for (const [args, message] of BARE) {
      const r = cli(args);
      const name = ['hermes-fs', ...args].join(' ');
      expect(r.status, name).toBe(2);
      expect(r.stdout, name).toBe('');
      expect(r.stderr, name).toMatch(new RegExp(`^Usage: ${name} \\[options\\] \\[command\\]\n`));
      expect(r.stderr, name).toContain('Examples:');
      const j = cli([...args, '--json']);
      expect(j.status, `${name} --json`).toBe(2);
      expect(j.stderr, `${name} --json`).toMatch(/^Usage: /);
      expect(JSON.parse(j.stdout), `${name} --json`).toEqual({
        schemaVersion: 1,
        command: args.length === 0 ? 'hermes-fs' : args.join(' '),
        ok: false,
        exitCode: 2,
        error: { code: 'EUSAGE', message, path: null, hint: `${name} --help for usage and examples` },
      });
      seen.push(`${name}: exit ${String(r.status)}, stdout ${String(r.stdout.length)} B, stderr ${String(r.stderr.length)} B`);
    }
    // Asked for, the help is a success on stdout: `help`, `pending help`.
    for (const args of [['help'], ['pending', 'help']]) {
      const r = cli(args);
      expect(r.status, args.join(' ')).toBe(0);
      expect(r.stderr, args.join(' ')).toBe('');
      expect(r.stdout, args.join(' ')).toMatch(/^Usage: hermes-fs /);
    }
    console.log(`bare commands: ${seen.join('; ')}`);
  });
});

describe('colour', () => {
  const home = freshHome();
  seedHome(home);

  it('NO_COLOR output has no ANSI escapes (doctor, pending list, matrix)', () => {
    for (const args of [['doctor', '--home', home], ['pending', 'list', '--home', home], ['matrix', '--only', 'state-db']]) {
      const r = cli(args, { env: { NO_COLOR: '1' } });
      expect(r.stdout + r.stderr, args.join(' ')).not.toMatch(ANSI);
    }
  });

  it('not a terminal: no ANSI escapes, even under CI; FORCE_COLOR or --color turn colour on, FORCE_COLOR=0 off', () => {
    const args = [['doctor', '--home', home], ['pending', 'list', '--home', home], ['doctor', '--home', '/nonexistent/x']];
    for (const a of args) {
      const r = cli(a, { env: { CI: 'true', NO_COLOR: undefined, FORCE_COLOR: undefined } });
      expect(r.stdout + r.stderr, `CI ${a.join(' ')}`).not.toMatch(ANSI);
      const forced = cli(a, { env: { FORCE_COLOR: '1', NO_COLOR: undefined } });
      expect(forced.stdout + forced.stderr, `FORCE_COLOR=1 ${a.join(' ')}`).toMatch(ANSI);
      const off = cli(a, { env: { FORCE_COLOR: '0', NO_COLOR: undefined } });
      expect(off.stdout + off.stderr, `FORCE_COLOR=0 ${a.join(' ')}`).not.toMatch(ANSI);
      const flag = cli(['--color', ...a], { env: { NO_COLOR: '1', FORCE_COLOR: undefined } });
      expect(flag.stdout + flag.stderr, `--color ${a.join(' ')}`).toMatch(ANSI);
    }
  });

  itNeeds(['script'], 'on a terminal: colour by default, none with NO_COLOR, TERM=dumb or --no-color', () => {
    const run = (env: Record<string, string | undefined>, flags: readonly string[] = []) =>
      spawnSync('script', ['-qec', `${process.execPath} ${BIN} ${flags.join(' ')} matrix --only state-db`, '/dev/null'], {
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: undefined, FORCE_COLOR: undefined, TERM: 'xterm-256color', ...env },
      });
    const colored = run({});
    expect(colored.status, colored.stderr).toBe(0);
    expect(colored.stdout).toMatch(ANSI);
    for (const [env, flags] of [[{ NO_COLOR: '1' }, []], [{ TERM: 'dumb' }, []], [{}, ['--no-color']]] as const) {
      const plain = run(env, flags);
      expect(plain.status, plain.stderr).toBe(0);
      expect(plain.stdout, JSON.stringify([env, flags])).not.toMatch(ANSI);
      expect(plain.stdout).toContain('✓ all 15 cells match docs/permissions.md');
    }
  });
});
