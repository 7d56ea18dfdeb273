/**
 * The generated provisioning, applied by the real tools: `systemd-tmpfiles --create` builds managed and
 * unmanaged homes from `hermes-fs provision tmpfiles`, the doctor finds nothing wrong with them, a real second
 * uid of the service group writes into the managed one (S3) and is refused, with the failure reported, in the
 * unmanaged one (S1); `systemd-analyze verify` accepts the generated units. Expected modes are the literal
 * values of docs/permissions.md.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestUsers, describeNeeds, runNode, type TestUsers, tempRoot } from '@hermes/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../src/index.js';
import { cli, cliJson, fixture, modeOf } from './helpers.js';

function provision(args: readonly string[]): string {
  const r = cli(['provision', ...args]);
  expect(r.stderr).toBe('');
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

/** `systemd-tmpfiles --create [--root=ROOT] CONF`: must succeed without a word on stderr. */
function tmpfilesCreate(conf: string, root?: string): void {
  const r = spawnSync('systemd-tmpfiles', ['--create', ...(root === undefined ? [] : [`--root=${root}`]), conf], { encoding: 'utf8' });
  expect(r.stderr, r.stderr).toBe('');
  expect(r.status, r.stderr).toBe(0);
}

/** A root for `--root`: its etc/passwd and etc/group hold the test users, which tmpfiles resolves there. */
function rootWith(users: TestUsers): string {
  const root = tempRoot('hermes-prov-');
  fs.mkdirSync(path.join(root, 'etc'));
  const passwd = users.users.map((u) => execFileSync('getent', ['passwd', u.name], { encoding: 'utf8' }).trim());
  fs.writeFileSync(path.join(root, 'etc', 'passwd'), `${passwd.join('\n')}\n`);
  fs.writeFileSync(path.join(root, 'etc', 'group'), execFileSync('getent', ['group', users.group], { encoding: 'utf8' }));
  return root;
}

const DIRS = ['', 'cron', 'sessions', 'logs', 'memories', 'pairing', 'hooks', 'image_cache', 'audio_cache', 'skills', 'pending_messages', 'moa-traces', 'trajectories', 'sessions/saved'];

/** Mode and owner of every directory kind of a home. */
function layout(home: string): Record<string, [string, number, number]> {
  const out: Record<string, [string, number, number]> = {};
  for (const rel of DIRS) {
    const st = fs.lstatSync(path.join(home, rel));
    out[rel === '' ? '.' : rel] = [modeOf(path.join(home, rel)), st.uid, st.gid];
  }
  return out;
}

function expectedLayout(modes: Record<string, string>, uid: number, gid: number): Record<string, [string, number, number]> {
  return Object.fromEntries(Object.entries(modes).map(([rel, mode]) => [rel, [mode, uid, gid]]));
}

interface WriteReport {
  uid: number;
  flush: { written: { path: string; mode: string; uid: number }[]; failed: { code: string; path: string; uid: number; line: string }[] };
  trace: { written: boolean; path: string | null; mode?: string; uid?: number; code?: string | null; message?: string };
}

function doctor(home: string, args: readonly string[] = [], env: Record<string, string> = {}) {
  return cliJson<DoctorReport>(['doctor', '--home', home, ...args], { env });
}

describeNeeds(['root', 'useradd', 'systemd-tmpfiles'], 'systemd-tmpfiles --create with the generated configuration', () => {
  let users: TestUsers;
  let owner: { name: string; uid: number };
  let member: { name: string; uid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    const [a, b] = users.users;
    if (a === undefined || b === undefined) throw new Error('createTestUsers(2) returned fewer users');
    owner = a;
    member = b;
  });
  afterAll(() => {
    users.cleanup();
  });

  function build(flags: readonly string[]): { root: string; home: string; conf: string } {
    const root = rootWith(users);
    const conf = path.join(root, 'generated.conf');
    fs.writeFileSync(conf, provision(['tmpfiles', '--home', '/var/lib/hermes', '--user', owner.name, '--group', users.group, ...flags]));
    tmpfilesCreate(conf, root);
    return { root, home: path.join(root, 'var', 'lib', 'hermes'), conf };
  }

  function writeAs(uid: number, home: string, umask: number): WriteReport {
    const r = runNode(fixture('provision-write.mjs'), [], { uid, gid: users.gid, umask, env: { HERMES_HOME: home }, timeoutMs: 60_000 });
    const line = r.stdout.trim().split('\n').pop() ?? '';
    try {
      return JSON.parse(line) as WriteReport;
    } catch {
      throw new Error(`provision-write printed no JSON (status ${String(r.status)}): ${r.stdout}\n${r.stderr}`);
    }
  }

  it('managed: the S3 layout; the doctor reports zero findings; a second uid of the group flushes and traces (S3)', () => {
    const { home } = build(['--managed', '--manager', 'nixos']);
    const M = '2770';
    expect(layout(home)).toEqual(
      expectedLayout(
        { '.': M, cron: M, sessions: M, logs: M, memories: M, pairing: M, hooks: M, image_cache: M, audio_cache: M, skills: M, pending_messages: M, 'moa-traces': M, trajectories: M, 'sessions/saved': M },
        owner.uid,
        users.gid,
      ),
    );
    expect(modeOf(path.join(home, '.managed'))).toBe('0644');
    expect(fs.readFileSync(path.join(home, '.managed'), 'utf8')).toBe('nixos');

    for (const args of [['--managed'], []]) {
      const { run, json } = doctor(home, args);
      expect(json.findings, args.join(' ')).toEqual([]);
      expect(run.status, run.stderr).toBe(0);
      expect(json.managed).toMatchObject({ managed: true, source: args.length > 0 ? 'flag' : 'marker' });
    }

    // The second uid: umask 0007, no HERMES_MANAGED (an interactive member of the group): the marker says managed.
    const w = writeAs(member.uid, home, 0o007);
    expect(w.flush.failed).toEqual([]);
    expect(w.flush.written.map((x) => [path.relative(home, path.dirname(x.path)), x.mode, x.uid])).toEqual([['pending_messages', '0600', member.uid]]);
    expect(w.trace).toMatchObject({ written: true, mode: '0600', uid: member.uid });
    expect(path.relative(home, path.dirname(w.trace.path ?? ''))).toBe('moa-traces');
    // The owner's doctor still finds nothing: the member's files are 0600, in the service group.
    expect(doctor(home, ['--managed']).json.findings).toEqual([]);
  });

  it('unmanaged: the S1 layout; the doctor reports zero findings; the second uid is refused and the EACCES reported (S1)', () => {
    const { home } = build(['--unmanaged']);
    const U = '0700';
    expect(layout(home)).toEqual(
      expectedLayout(
        { '.': U, cron: U, sessions: U, logs: U, memories: U, pairing: U, hooks: U, image_cache: U, audio_cache: U, skills: U, pending_messages: U, 'moa-traces': U, trajectories: U, 'sessions/saved': U },
        owner.uid,
        users.gid,
      ),
    );
    expect(fs.existsSync(path.join(home, '.managed'))).toBe(false);
    for (const args of [['--unmanaged'], []]) {
      const { run, json } = doctor(home, args);
      expect(json.findings, args.join(' ')).toEqual([]);
      expect(run.status, run.stderr).toBe(0);
      expect(json.managed.managed).toBe(false);
    }

    const w = writeAs(member.uid, home, 0o022);
    expect(w.flush.written).toEqual([]);
    expect(w.flush.failed).toHaveLength(1);
    const failed = w.flush.failed[0];
    expect(failed?.code).toBe('EACCES');
    expect(failed?.uid).toBe(member.uid);
    expect(failed?.line).toContain(home);
    expect(failed?.line).toContain(`uid ${String(member.uid)}`);
    expect(w.trace).toMatchObject({ written: false, code: 'EACCES' });
    expect(w.trace.message).toContain(home);
    expect(fs.readdirSync(path.join(home, 'pending_messages'))).toEqual([]);
    expect(fs.readdirSync(path.join(home, 'moa-traces'))).toEqual([]);
  });

  it('HERMES_HOME_MODE=0701: the S5 layout; the doctor with the same variable reports zero findings', () => {
    const { home } = build(['--unmanaged', '--home-mode', '0701']);
    const H = '0701';
    const U = '0700';
    expect(layout(home)).toEqual(
      expectedLayout(
        { '.': H, cron: H, sessions: H, logs: H, memories: H, pairing: H, hooks: H, image_cache: H, audio_cache: H, skills: H, pending_messages: H, 'moa-traces': U, trajectories: U, 'sessions/saved': U },
        owner.uid,
        users.gid,
      ),
    );
    const { run, json } = doctor(home, ['--unmanaged'], { HERMES_HOME_MODE: '0701' });
    expect(json.findings).toEqual([]);
    expect(run.status, run.stderr).toBe(0);
  });

  it('unmanaged: the doctor holds every directory to the mode of its d line; a second run of tmpfiles brings back only the z directories', () => {
    const { root, home, conf } = build(['--unmanaged']);
    for (const rel of DIRS) fs.chmodSync(path.join(home, rel), 0o750);
    const planned = Object.fromEntries(
      fs
        .readFileSync(conf, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('d '))
        .map((l) => {
          const [, p, mode] = l.split(' ');
          return [path.join(root, p ?? ''), (mode ?? '').replace(':', '')];
        }),
    );
    const audit = doctor(home, ['--unmanaged']).json;
    const seen = Object.fromEntries(audit.findings.filter((f) => f.type === 'dir-mode').map((f) => [f.path, f.expected]));
    expect(seen).toEqual(planned);
    expect(Object.keys(seen)).toHaveLength(14);

    tmpfilesCreate(conf, root);
    const after = Object.fromEntries(Object.entries(layout(home)).map(([rel, [mode]]) => [rel, mode]));
    expect(after).toEqual({
      '.': '0700', cron: '0700', sessions: '0700', logs: '0700', memories: '0700', pairing: '0700', hooks: '0700', image_cache: '0700', audio_cache: '0700', skills: '0700',
      pending_messages: '0750', 'moa-traces': '0750', trajectories: '0750', 'sessions/saved': '0750', // kept, as the runtime keeps them
    });
    const fixed = doctor(home, ['--unmanaged', '--fix']);
    expect(fixed.json.findings).toEqual([]);
    expect(Object.values(layout(home)).map(([mode]) => mode)).toEqual(DIRS.map(() => '0700'));
  });

  it('managed: a legacy 0700 tree is kept by tmpfiles and reported by the doctor as lacking 2770; wider than 2770 is reported too', () => {
    const { root, home, conf } = build(['--managed']);
    for (const rel of DIRS) fs.chmodSync(path.join(home, rel), 0o700);
    tmpfilesCreate(conf, root);
    expect(Object.values(layout(home)).map(([mode]) => mode)).toEqual(DIRS.map(() => '0700'));
    const audit = doctor(home, ['--managed']).json;
    const byPath = (a: readonly unknown[], b: readonly unknown[]): number => String(a[0]).localeCompare(String(b[0]));
    expect(audit.findings.map((f) => [path.relative(home, f.path), f.type, f.mode, f.expected, f.fixable]).sort(byPath)).toEqual(
      DIRS.map((rel) => [rel, 'managed-group-access', '0700', '2770', true]).sort(byPath),
    );
    expect(doctor(home, ['--managed', '--fix']).json.findings).toEqual([]);
    expect(Object.values(layout(home)).map(([mode]) => mode)).toEqual(DIRS.map(() => '2770'));

    fs.chmodSync(path.join(home, 'moa-traces'), 0o2777);
    const wide = doctor(home, ['--managed']);
    expect(wide.json.findings).toEqual([
      expect.objectContaining({ type: 'dir-mode', severity: 'error', path: path.join(home, 'moa-traces'), mode: '2777', expected: '2770', fixable: false }),
    ]);
    expect(wide.run.status, wide.run.stderr).toBe(1);
  });
});

describeNeeds(['root', 'useradd', 'systemd-tmpfiles'], 'doctor --tmpfiles: the installed configuration as managed evidence', () => {
  let users: TestUsers;
  let owner: { name: string; uid: number };
  beforeAll(() => {
    users = createTestUsers(1);
    const [a] = users.users;
    if (a === undefined) throw new Error('createTestUsers(1) returned no user');
    owner = a;
  });
  afterAll(() => {
    users.cleanup();
  });

  /** A home built by systemd-tmpfiles at its real path (no --root: the doctor matches the configuration's path). */
  function build(flags: readonly string[]): { home: string; conf: string } {
    const base = tempRoot('hermes-prov-');
    const home = path.join(base, 'home');
    const conf = path.join(base, 'hermes.conf');
    fs.writeFileSync(conf, provision(['tmpfiles', '--home', home, '--user', owner.name, '--group', users.group, ...flags]));
    tmpfilesCreate(conf);
    return { home, conf };
  }

  it('a managed home without its marker, audited under an empty environment: looks managed; with --tmpfiles: managed, zero findings', () => {
    const { home, conf } = build(['--managed', '--manager', 'nixos']);
    fs.rmSync(path.join(home, '.managed'));
    const bare = doctor(home);
    expect(bare.json.findings.map((f) => f.type)).toEqual(['looks-managed']);
    expect(bare.run.status, bare.run.stderr).toBe(1);
    const withConf = doctor(home, ['--tmpfiles', conf]);
    expect(withConf.json.managed).toMatchObject({ managed: true, system: 'nixos', source: 'tmpfiles' });
    expect(withConf.json.findings).toEqual([]);
    expect(withConf.run.status, withConf.run.stderr).toBe(0);

    // The fix command carries the evidence, and --fix with it repairs a legacy directory to 2770.
    fs.chmodSync(path.join(home, 'pending_messages'), 0o700);
    const legacy = doctor(home, ['--tmpfiles', conf]).json.findings;
    expect(legacy.map((f) => [f.type, f.expected, f.fix.split('   ')[0]])).toEqual([['managed-group-access', '2770', `hermes-fs doctor --fix --tmpfiles ${conf} --home ${home}`]]);
    expect(doctor(home, ['--tmpfiles', conf, '--fix']).json.findings).toEqual([]);
    expect(modeOf(path.join(home, 'pending_messages'))).toBe('2770');
  });

  it('an unmanaged configuration: unmanaged, zero findings', () => {
    const { home, conf } = build(['--unmanaged']);
    const { run, json } = doctor(home, ['--tmpfiles', conf]);
    expect(json.managed).toMatchObject({ managed: false, source: 'tmpfiles' });
    expect(json.findings).toEqual([]);
    expect(run.status, run.stderr).toBe(0);
  });

  it('the marker wins over a configuration that says otherwise, and the contradiction is reported', () => {
    const { home } = build(['--managed', '--manager', 'nixos']);
    const other = path.join(path.dirname(home), 'unmanaged.conf');
    fs.writeFileSync(other, provision(['tmpfiles', '--home', home, '--user', owner.name, '--unmanaged']));
    const { json } = doctor(home, ['--tmpfiles', other]);
    expect(json.managed).toMatchObject({ managed: true, source: 'marker' });
    expect(json.findings).toEqual([
      expect.objectContaining({ type: 'environment', severity: 'warning', path: home }),
    ]);
    expect(json.findings[0]?.problem).toContain('provisions this home unmanaged');
    expect(json.findings[0]?.problem).toContain('the .managed marker says managed, which wins');
    // The operator's flag wins too, and is told.
    const flagged = doctor(home, ['--tmpfiles', other, '--managed']).json;
    expect(flagged.managed).toMatchObject({ managed: true, source: 'flag' });
    expect(flagged.findings.map((f) => [f.type, f.problem.endsWith('but --managed says managed, which wins')])).toEqual([['environment', true]]);
  });
});

describe('doctor --tmpfiles: a file that is no evidence is refused (exit 2)', () => {
  it('a configuration without a rule for the home, a FIFO, a missing file', () => {
    const base = tempRoot('hermes-prov-');
    const home = path.join(base, 'home');
    fs.mkdirSync(home, { mode: 0o700 });
    const conf = path.join(base, 'other.conf');
    fs.writeFileSync(conf, 'd /var/lib/elsewhere 2770 root root -\n');
    const r = cli(['doctor', '--home', home, '--tmpfiles', conf]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`--tmpfiles ${conf} is no evidence for ${home}: it has no directory rule for ${home} (its directories: /var/lib/elsewhere)`);

    const fifo = path.join(base, 'fifo.conf');
    execFileSync('mkfifo', [fifo]);
    const f = cli(['doctor', '--home', home, '--tmpfiles', fifo]);
    expect(f.status, f.stderr).toBe(2);
    expect(f.stderr).toContain(`cannot read --tmpfiles ${fifo}`);

    const gone = cli(['doctor', '--home', home, '--tmpfiles', path.join(base, 'missing.conf')]);
    expect(gone.status, gone.stderr).toBe(2);
    expect(gone.stderr).toContain('ENOENT');
  });
});

describeNeeds(['systemd-analyze'], 'systemd-analyze verify accepts the generated units', () => {
  const node = process.execPath;

  function verify(unitFile: string): { status: number | null; stderr: string } {
    const r = spawnSync('systemd-analyze', ['verify', unitFile], { encoding: 'utf8' });
    return { status: r.status, stderr: r.stderr };
  }

  it('full units (managed, unmanaged, HERMES_HOME_MODE): exit 0 and not one warning', () => {
    const dir = tempRoot('hermes-unit-');
    for (const [name, flags] of [
      ['hermes-fs-managed', ['--managed', '--manager', 'nixos']],
      ['hermes-fs-unmanaged', ['--unmanaged']],
      ['hermes-fs-s5', ['--unmanaged', '--home-mode', '0701', '--flush-budget-ms', '30000']],
    ] as const) {
      const file = path.join(dir, `${name}.service`);
      fs.writeFileSync(file, provision(['systemd', '--exec-start', `${node} -e 0`, ...flags]));
      expect(verify(file), name).toEqual({ status: 0, stderr: '' });
    }
  });

  it('the drop-in, next to a unit that only has ExecStart=', () => {
    const dir = tempRoot('hermes-unit-');
    const unit = path.join(dir, 'hermes-fs-dropin.service');
    fs.writeFileSync(unit, `[Service]\nExecStart=${node} -e 0\n`);
    fs.mkdirSync(`${unit}.d`);
    fs.writeFileSync(path.join(`${unit}.d`, '50-hermes-fs.conf'), provision(['systemd']));
    expect(verify(unit)).toEqual({ status: 0, stderr: '' });
    // The control: verify does read the drop-in, and says so for a line it cannot parse.
    fs.appendFileSync(path.join(`${unit}.d`, '50-hermes-fs.conf'), 'UMask=0999\n');
    expect(verify(unit).stderr).toContain('Failed to parse mode value');
  });
});
