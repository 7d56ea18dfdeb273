/**
 * Golden tests of `hermes-fs provision`: every generated line is written out here literally, each mode taken
 * from the tables of docs/permissions.md ("Provisioning" and "The permission table"), never from the registry
 * the generator reads. A mode changed in the registry fails these until the table (and this file) follow.
 */
import * as fs from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import type { ProvisionNixosDocument, ProvisionRegistryDocument, ProvisionSystemdDocument, ProvisionTmpfilesDocument } from '../src/index.js';
import { cli, cliJson } from './helpers.js';

const INSTALL = ['--home', '/var/lib/hermes', '--user', 'hermes', '--group', 'hermes'];

/** The generated file without its comment header. */
function body(text: string): string[] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

function run(args: readonly string[]): string {
  const r = cli(['provision', ...args]);
  expect(r.stderr).toBe('');
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe('provision tmpfiles: every line against docs/permissions.md', () => {
  it('managed (S3 column): every directory 2770 with the owner, created only when absent; the marker 0644; no z line', () => {
    expect(body(run(['tmpfiles', ...INSTALL, '--managed', '--manager', 'nixos']))).toEqual([
      'd /var/lib/hermes :2770 :hermes :hermes -', // the home: managed 2770
      'd /var/lib/hermes/cron :2770 :hermes :hermes -', // cron/ …: managed 2770
      'd /var/lib/hermes/sessions :2770 :hermes :hermes -',
      'd /var/lib/hermes/logs :2770 :hermes :hermes -',
      'd /var/lib/hermes/memories :2770 :hermes :hermes -',
      'd /var/lib/hermes/pairing :2770 :hermes :hermes -',
      'd /var/lib/hermes/hooks :2770 :hermes :hermes -',
      'd /var/lib/hermes/image_cache :2770 :hermes :hermes -',
      'd /var/lib/hermes/audio_cache :2770 :hermes :hermes -',
      'd /var/lib/hermes/skills :2770 :hermes :hermes -',
      'd /var/lib/hermes/pending_messages :2770 :hermes :hermes -', // S3 pending_messages/ 2770
      'd /var/lib/hermes/moa-traces :2770 :hermes :hermes -', // S3 moa-traces/ 2770
      'd /var/lib/hermes/trajectories :2770 :hermes :hermes -', // managed trajectories/ 2770
      'd /var/lib/hermes/sessions/saved :2770 :hermes :hermes -', // S3 sessions/saved/ 2770
      'f /var/lib/hermes/.managed :0644 :hermes :hermes - nixos', // marker 0644, the manager's name
    ]);
  });

  it('unmanaged (S1/S2 column): every directory 0700; z lines for the home and the standard subdirectories only', () => {
    expect(body(run(['tmpfiles', ...INSTALL, '--unmanaged']))).toEqual([
      'd /var/lib/hermes :0700 :hermes :hermes -', // the home 0700, brought back to the mode
      'z /var/lib/hermes 0700 - - -',
      'd /var/lib/hermes/cron :0700 :hermes :hermes -',
      'z /var/lib/hermes/cron 0700 - - -',
      'd /var/lib/hermes/sessions :0700 :hermes :hermes -',
      'z /var/lib/hermes/sessions 0700 - - -',
      'd /var/lib/hermes/logs :0700 :hermes :hermes -',
      'z /var/lib/hermes/logs 0700 - - -',
      'd /var/lib/hermes/memories :0700 :hermes :hermes -',
      'z /var/lib/hermes/memories 0700 - - -',
      'd /var/lib/hermes/pairing :0700 :hermes :hermes -',
      'z /var/lib/hermes/pairing 0700 - - -',
      'd /var/lib/hermes/hooks :0700 :hermes :hermes -',
      'z /var/lib/hermes/hooks 0700 - - -',
      'd /var/lib/hermes/image_cache :0700 :hermes :hermes -',
      'z /var/lib/hermes/image_cache 0700 - - -',
      'd /var/lib/hermes/audio_cache :0700 :hermes :hermes -',
      'z /var/lib/hermes/audio_cache 0700 - - -',
      'd /var/lib/hermes/skills :0700 :hermes :hermes -',
      'z /var/lib/hermes/skills 0700 - - -',
      'd /var/lib/hermes/pending_messages :0700 :hermes :hermes -', // S1 pending_messages/ 0700, kept
      'd /var/lib/hermes/moa-traces :0700 :hermes :hermes -', // S1 moa-traces/ 0700, kept
      'd /var/lib/hermes/trajectories :0700 :hermes :hermes -',
      'd /var/lib/hermes/sessions/saved :0700 :hermes :hermes -', // S1 sessions/saved/ 0700, kept
    ]);
  });

  it('HERMES_HOME_MODE=0701 (S5 column): honoured by the home, its peers and pending_messages/; never by moa-traces/, sessions/saved/, trajectories/', () => {
    expect(body(run(['tmpfiles', ...INSTALL, '--unmanaged', '--home-mode', '0701']))).toEqual([
      'd /var/lib/hermes :0701 :hermes :hermes -',
      'z /var/lib/hermes 0701 - - -',
      'd /var/lib/hermes/cron :0701 :hermes :hermes -',
      'z /var/lib/hermes/cron 0701 - - -',
      'd /var/lib/hermes/sessions :0701 :hermes :hermes -',
      'z /var/lib/hermes/sessions 0701 - - -',
      'd /var/lib/hermes/logs :0701 :hermes :hermes -',
      'z /var/lib/hermes/logs 0701 - - -',
      'd /var/lib/hermes/memories :0701 :hermes :hermes -',
      'z /var/lib/hermes/memories 0701 - - -',
      'd /var/lib/hermes/pairing :0701 :hermes :hermes -',
      'z /var/lib/hermes/pairing 0701 - - -',
      'd /var/lib/hermes/hooks :0701 :hermes :hermes -',
      'z /var/lib/hermes/hooks 0701 - - -',
      'd /var/lib/hermes/image_cache :0701 :hermes :hermes -',
      'z /var/lib/hermes/image_cache 0701 - - -',
      'd /var/lib/hermes/audio_cache :0701 :hermes :hermes -',
      'z /var/lib/hermes/audio_cache 0701 - - -',
      'd /var/lib/hermes/skills :0701 :hermes :hermes -',
      'z /var/lib/hermes/skills 0701 - - -',
      'd /var/lib/hermes/pending_messages :0701 :hermes :hermes -', // S5 pending_messages/ 0701
      'd /var/lib/hermes/moa-traces :0700 :hermes :hermes -', // S5 moa-traces/ 0700
      'd /var/lib/hermes/trajectories :0700 :hermes :hermes -',
      'd /var/lib/hermes/sessions/saved :0700 :hermes :hermes -', // S5 sessions/saved/ 0700
    ]);
  });

  it('the header says what generated the file and for which install', () => {
    const text = run(['tmpfiles', ...INSTALL, '--unmanaged', '--home-mode', '0701']);
    expect(text.split('\n').slice(0, 2)).toEqual([
      '# Generated by `hermes-fs provision tmpfiles` from the @hermes/fs-policy registry; regenerate, do not edit.',
      '# home /var/lib/hermes, owner hermes:hermes, unmanaged, HERMES_HOME_MODE=0701.',
    ]);
  });
});

describe('provision systemd: every line against docs/permissions.md', () => {
  it('managed drop-in: UMask=0007, StateDirectoryMode=2770, HERMES_MANAGED, a 15 s stop timeout (5000 ms flush + 5000 ms synchronous budget + 5 s)', () => {
    expect(body(run(['systemd', ...INSTALL, '--manager', 'nixos']))).toEqual([
      '[Service]',
      'User=hermes',
      'Group=hermes',
      'UMask=0007', // service umask 0007
      'StateDirectory=hermes',
      'StateDirectoryMode=2770', // the home: managed 2770
      'Environment=HERMES_HOME=/var/lib/hermes',
      'Environment=HERMES_MANAGED=nixos',
      'ReadWritePaths=/var/lib/hermes',
      'KillSignal=SIGTERM',
      'TimeoutStopSec=15s',
      'SuccessExitStatus=143',
    ]);
  });

  it('unmanaged full unit with HERMES_HOME_MODE=0701: no UMask=, StateDirectoryMode=0701, the variable passed on', () => {
    expect(body(run(['systemd', ...INSTALL, '--unmanaged', '--home-mode', '0701', '--exec-start', '/usr/bin/hermes gateway', '--flush-budget-ms', '15500', '--sync-budget-ms', '2000']))).toEqual([
      '[Unit]',
      'Description=Hermes gateway (/var/lib/hermes)',
      '[Service]',
      'Type=simple',
      'ExecStart=/usr/bin/hermes gateway',
      'User=hermes',
      'Group=hermes',
      'StateDirectory=hermes',
      'StateDirectoryMode=0701', // the home: S5 0701
      'Environment=HERMES_HOME=/var/lib/hermes',
      'Environment=HERMES_MANAGED=false',
      'Environment=HERMES_HOME_MODE=0701',
      'ReadWritePaths=/var/lib/hermes',
      'KillSignal=SIGTERM',
      'TimeoutStopSec=23s', // 15500 ms + 2000 ms + 5000 ms, rounded up
      'SuccessExitStatus=143',
      '[Install]',
      'WantedBy=multi-user.target',
    ]);
  });

  it('unmanaged, HERMES_HOME_MODE unset: StateDirectoryMode=0700; a home outside /var/lib has no StateDirectory=', () => {
    expect(body(run(['systemd', ...INSTALL, '--unmanaged'])).filter((l) => l.startsWith('StateDirectory'))).toEqual(['StateDirectory=hermes', 'StateDirectoryMode=0700']);
    const elsewhere = body(run(['systemd', '--home', '/srv/hermes', '--user', 'hermes']));
    expect(elsewhere.filter((l) => l.startsWith('StateDirectory'))).toEqual([]);
    expect(elsewhere).toContain('ReadWritePaths=/srv/hermes');
    expect(body(run(['systemd', '--home', '/var/lib/hermes/.hermes', '--user', 'hermes']))).toContain('StateDirectory=hermes/.hermes');
  });
});

describe('provision nixos: every line against docs/permissions.md', () => {
  it('managed: the tmpfiles rules and the service values, in Nix', () => {
    expect(body(run(['nixos', ...INSTALL]))).toEqual([
      '{ ... }:',
      '{',
      '  systemd.tmpfiles.rules = [',
      '    "d /var/lib/hermes :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/cron :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/sessions :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/logs :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/memories :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/pairing :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/hooks :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/image_cache :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/audio_cache :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/skills :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/pending_messages :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/moa-traces :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/trajectories :2770 :hermes :hermes -"',
      '    "d /var/lib/hermes/sessions/saved :2770 :hermes :hermes -"',
      '    "f /var/lib/hermes/.managed :0644 :hermes :hermes - nixos"',
      '  ];',
      '  systemd.services.hermes = {',
      '    environment = {',
      '      HERMES_HOME = "/var/lib/hermes";',
      '      HERMES_MANAGED = "nixos";',
      '    };',
      '    serviceConfig = {',
      '      User = "hermes";',
      '      Group = "hermes";',
      '      UMask = "0007";',
      '      StateDirectory = "hermes";',
      '      StateDirectoryMode = "2770";',
      '      ReadWritePaths = [ "/var/lib/hermes" ];',
      '      KillSignal = "SIGTERM";',
      '      TimeoutStopSec = "15s";',
      '      SuccessExitStatus = "143";',
      '    };',
      '  };',
      '}',
    ]);
  });

  it('unmanaged with HERMES_HOME_MODE=0701: the S5 modes, no UMask, the variable in the environment', () => {
    const lines = body(run(['nixos', ...INSTALL, '--unmanaged', '--home-mode', '0701', '--service', 'hermes-agent']));
    expect(lines.filter((l) => l.trim().startsWith('"'))).toEqual([
      '    "d /var/lib/hermes :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes 0701 - - -"',
      '    "d /var/lib/hermes/cron :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/cron 0701 - - -"',
      '    "d /var/lib/hermes/sessions :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/sessions 0701 - - -"',
      '    "d /var/lib/hermes/logs :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/logs 0701 - - -"',
      '    "d /var/lib/hermes/memories :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/memories 0701 - - -"',
      '    "d /var/lib/hermes/pairing :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/pairing 0701 - - -"',
      '    "d /var/lib/hermes/hooks :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/hooks 0701 - - -"',
      '    "d /var/lib/hermes/image_cache :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/image_cache 0701 - - -"',
      '    "d /var/lib/hermes/audio_cache :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/audio_cache 0701 - - -"',
      '    "d /var/lib/hermes/skills :0701 :hermes :hermes -"',
      '    "z /var/lib/hermes/skills 0701 - - -"',
      '    "d /var/lib/hermes/pending_messages :0701 :hermes :hermes -"',
      '    "d /var/lib/hermes/moa-traces :0700 :hermes :hermes -"',
      '    "d /var/lib/hermes/trajectories :0700 :hermes :hermes -"',
      '    "d /var/lib/hermes/sessions/saved :0700 :hermes :hermes -"',
    ]);
    expect(lines).toContain('  systemd.services.hermes-agent = {');
    expect(lines).toContain('      HERMES_MANAGED = "false";');
    expect(lines).toContain('      HERMES_HOME_MODE = "0701";');
    expect(lines).toContain('      StateDirectoryMode = "0701";');
    expect(lines.some((l) => l.includes('UMask'))).toBe(false);
  });

  it('unmanaged, HERMES_HOME_MODE unset (S1 column): the home 0700 in the rules and in StateDirectoryMode', () => {
    const lines = body(run(['nixos', ...INSTALL, '--unmanaged']));
    expect(lines.filter((l) => l.includes('/var/lib/hermes ') || l.includes('StateDirectoryMode') || l.includes('/moa-traces '))).toEqual([
      '    "d /var/lib/hermes :0700 :hermes :hermes -"',
      '    "z /var/lib/hermes 0700 - - -"',
      '    "d /var/lib/hermes/moa-traces :0700 :hermes :hermes -"',
      '      StateDirectoryMode = "0700";',
    ]);
  });
});

describe('provision: the three outputs agree, --json and the schema', () => {
  const schema = JSON.parse(fs.readFileSync(new URL('../schema/provision.schema.json', import.meta.url), 'utf8')) as object;
  const validate = new Ajv({ allErrors: true, strict: true }).compile(schema);

  it('every --json document validates against schema/provision.schema.json, and its text is what the command prints', () => {
    for (const args of [
      ['tmpfiles', ...INSTALL],
      ['tmpfiles', ...INSTALL, '--unmanaged', '--home-mode', '0701'],
      ['systemd', ...INSTALL],
      ['systemd', ...INSTALL, '--unmanaged', '--exec-start', '/usr/bin/hermes gateway'],
      ['nixos', ...INSTALL],
      ['registry'],
    ]) {
      const { run: r, json } = cliJson<{ text: string }>(['provision', ...args]);
      expect(r.status, args.join(' ')).toBe(0);
      expect(validate(json), `${args.join(' ')}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(json.text, args.join(' ')).toBe(run(args));
    }
  });

  it('the nixos rules are the tmpfiles lines, its service values the unit settings', () => {
    const t = cliJson<ProvisionTmpfilesDocument>(['provision', 'tmpfiles', ...INSTALL, '--manager', 'nixos']).json;
    const s = cliJson<ProvisionSystemdDocument>(['provision', 'systemd', ...INSTALL, '--manager', 'nixos']).json;
    const n = cliJson<ProvisionNixosDocument>(['provision', 'nixos', ...INSTALL]).json;
    expect(n.fragment.tmpfilesRules).toEqual(t.lines.map((l) => l.line));
    const fromUnit = s.settings.filter((x) => x.key !== 'Environment').map((x) => [x.key, x.value]);
    expect(Object.entries(n.fragment.serviceConfig).map(([k, v]) => [k, typeof v === 'string' ? v : v.join(' ')])).toEqual(fromUnit);
    expect(Object.entries(n.fragment.environment).map(([k, v]) => `${k}=${v}`)).toEqual(s.settings.filter((x) => x.key === 'Environment').map((x) => x.value));
    expect(s.flushBudget).toEqual({ ms: 5000, source: 'config-default', syncMs: 5000, syncSource: 'flush-budget' });
    expect(s.text).toContain('# TimeoutStopSec = flush budget 5000 ms (gateway.shutdown_flush_budget_ms default) + synchronous budget 5000 ms (as the flush budget) + 5000 ms margin.');
    const set = cliJson<ProvisionSystemdDocument>(['provision', 'systemd', ...INSTALL, '--flush-budget-ms', '15500']).json;
    expect(set.settings.find((x) => x.key === 'TimeoutStopSec')?.value).toBe('36s'); // 15500 + 15500 + 5000 ms
    expect(s.unit).toEqual({ type: 'drop-in', installPath: '/etc/systemd/system/hermes.service.d/50-hermes-fs.conf' });
  });

  it('provision registry --json: the literal table rows of docs/permissions.md', () => {
    const { json } = cliJson<ProvisionRegistryDocument>(['provision', 'registry']);
    const row = (name: string): unknown => {
      const k = json.registry.kinds.find((x) => x.name === name);
      return k === undefined ? undefined : [k.dir, k.dirMode, k.honoursHomeMode, k.reconciledWhenUnmanaged, k.file.mode, k.file.managedMode];
    };
    expect(row('home')).toEqual(['', '0700', true, true, '0600', 'umask']);
    expect(row('pending-messages')).toEqual(['pending_messages', '0700', true, false, '0600', '0600']);
    expect(row('moa-traces')).toEqual(['moa-traces', '0700', false, false, '0600', '0600']);
    expect(row('saved-sessions')).toEqual(['sessions/saved', '0700', false, false, '0600', '0600']);
    expect(row('trajectories')).toEqual(['trajectories', '0700', false, false, '0600', '0600']);
    expect(row('state-db')).toEqual(['', '0700', true, false, '0600', 'umask']);
    expect(json.registry.managed).toEqual({ dirMode: '2770', umask: '0007', marker: { name: '.managed', mode: '0644' } });
    expect(json.registry.standardSubdirs).toEqual(['cron', 'sessions', 'logs', 'memories', 'pairing', 'hooks', 'image-cache', 'audio-cache', 'skills']);
  });
});

describe('provision: bad input is refused with exit 2, nothing printed on stdout', () => {
  const cases: readonly (readonly [string, readonly string[], RegExp])[] = [
    ['a relative home', ['tmpfiles', '--home', 'var/lib/hermes'], /--home must be an absolute path/],
    ['the root as home', ['tmpfiles', '--home', '/'], /never a Hermes home/],
    ['a home the files would have to escape', ['tmpfiles', '--home', '/var/lib/her mes'], /characters the generated files would have to escape/],
    ['a % specifier', ['systemd', '--home', '/var/lib/%h'], /characters the generated files would have to escape/],
    ['a Nix interpolation', ['nixos', '--home', '/var/lib/${x}'], /characters the generated files would have to escape/],
    ['a bad user', ['tmpfiles', '--user', 'Hermes Bot'], /--user "Hermes Bot" is not a valid user or group name/],
    ['both install types', ['tmpfiles', '--managed', '--unmanaged'], /contradict each other/],
    ['HERMES_HOME_MODE on a managed install', ['tmpfiles', '--home-mode', '0701'], /--home-mode applies to unmanaged installs only/],
    ['an unparsable HERMES_HOME_MODE', ['tmpfiles', '--unmanaged', '--home-mode', '0601'], /the owner must keep rwx/],
    ['a manager that means not managed', ['tmpfiles', '--manager', 'false'], /means "not managed"/],
    ['a zero flush budget', ['systemd', '--flush-budget-ms', '0'], /positive whole number/],
    ['a synchronous budget that is no number', ['nixos', '--sync-budget-ms', '5s'], /positive whole number/],
    ['an ExecStart with a newline', ['systemd', '--exec-start', '/bin/true\nExecStartPre=/bin/evil'], /one non-empty command line/],
  ];
  for (const [what, args, message] of cases) {
    it(what, () => {
      const r = cli(['provision', ...args]);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
    });
  }
});

describe('provision --help', () => {
  for (const sub of ['tmpfiles', 'systemd', 'nixos', 'registry']) {
    it(`hermes-fs provision ${sub} --help shows --json and an example`, () => {
      const r = cli(['provision', sub, '--help']);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: hermes-fs provision ${sub} `));
      expect(r.stdout).toContain('--json');
      expect(r.stdout).toContain('Examples:');
      if (sub !== 'registry') expect(r.stdout).toContain('--home <dir>');
    });
  }
});
