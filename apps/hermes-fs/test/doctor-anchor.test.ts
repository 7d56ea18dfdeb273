// `hermes-fs doctor` says which anchor mode @hermes/fs-policy is in and why, in its text header and in --json,
// under HERMES_FS_ANCHOR=procfd and =native (the built CLI as a child process, on a seeded home).
import { createRequire } from 'node:module';
import { inCI } from '@hermes/test-utils';
import { afterAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../src/index.js';
import { cli, cliJson, cleanupHomes, freshHome, seedHome } from './helpers.js';

const figures: string[] = [];
afterAll(() => {
  cleanupHomes();
  console.log(`doctor anchor: ${figures.join('; ')}`);
});

/** The addon's own answer on this machine (loaded from the platform package as fs-policy loads it), or why there is none. */
function addonHere(): { openat2: boolean } | { why: string } {
  const pkg = process.platform === 'linux' ? { x64: '@hermes/fs-policy-linux-x64-gnu', arm64: '@hermes/fs-policy-linux-arm64-gnu' }[process.arch as string] : undefined;
  if (pkg === undefined) return { why: `no native build for ${process.platform}-${process.arch}` };
  try {
    const fromPolicy = createRequire(createRequire(import.meta.url).resolve('@hermes/fs-policy'));
    const b = fromPolicy(pkg) as { openat2Probe(): { available: boolean } };
    return { openat2: b.openat2Probe().available };
  } catch (err) {
    return { why: `${pkg} does not load: ${err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err)}` };
  }
}

function seeded(): string {
  const home = freshHome();
  seedHome(home);
  return home;
}

describe('hermes-fs doctor: the anchor mode', () => {
  it('HERMES_FS_ANCHOR=procfd: --json says procfd and why, the text header says it on its third line', () => {
    const home = seeded();
    const env = { HERMES_FS_ANCHOR: 'procfd' };
    const { run, json } = cliJson<DoctorReport>(['doctor', '--home', home], { env });
    expect(run.status, run.stderr).toBe(0);
    expect(json.anchor).toEqual({ mode: 'procfd', reason: 'HERMES_FS_ANCHOR=procfd', openat2: false });
    const text = cli(['doctor', '--home', home], { env: { ...env, NO_COLOR: '1' } });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout.split('\n')[2]).toBe('anchor mode procfd: HERMES_FS_ANCHOR=procfd');
    figures.push(`procfd: ${json.anchor.mode} (${json.anchor.reason})`);
  });

  const addon = addonHere();
  // Outside CI a machine without the built addon skips this (pnpm -C packages/fs-policy-linux-x64-gnu build makes
  // it); under CI it runs, and a missing addon fails it (the doctor then says procfd).
  it.skipIf('why' in addon && !inCI)(`HERMES_FS_ANCHOR=native: --json says native, with openat2 as the kernel answers${'why' in addon ? ` [no addon: ${addon.why}]` : ''}`, () => {
    const openat2 = 'openat2' in addon && addon.openat2;
    const reason = openat2 ? 'the addon is loaded and the kernel has openat2' : 'the addon is loaded; the kernel has no openat2 (openat per component)';
    const home = seeded();
    const env = { HERMES_FS_ANCHOR: 'native' };
    const { run, json } = cliJson<DoctorReport>(['doctor', '--home', home], { env });
    expect(run.status, run.stderr).toBe(0);
    expect(json.anchor).toEqual({ mode: 'native', reason, openat2 });
    const text = cli(['doctor', '--home', home], { env: { ...env, NO_COLOR: '1' } });
    expect(text.stdout.split('\n')[2]).toBe(`anchor mode native: ${reason}`);
    figures.push(`native: ${json.anchor.mode} (openat2 ${String(json.anchor.openat2)})`);
  });
});
