import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lastJson, makeScenarioHome, modeOf, runNode, scenario, scenarioEnv, tempRoot } from '@hermes/test-utils';
import { afterEach, describe, expect, it } from 'vitest';

const FIXTURE = fileURLToPath(new URL('./fixtures/open-db.mjs', import.meta.url));

interface ChildResult {
  ok: boolean;
  code?: string | null;
  modes?: Record<string, string>;
}

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

function root(): string {
  const r = tempRoot('hermes-sdb-modes-');
  roots.push(r);
  return r;
}

describe('state.db, -wal and -shm modes (each in its own child process with its own umask)', () => {
  it('unmanaged, umask 022: 0600 for all three', () => {
    const s = scenario('S1');
    const home = makeScenarioHome(s, { root: root() });
    const child = lastJson<ChildResult>(runNode(FIXTURE, [], { umask: 0o022, env: scenarioEnv(s, home) }));
    expect(child).toEqual({ ok: true, modes: { 'state.db': '0600', 'state.db-wal': '0600', 'state.db-shm': '0600' } });
    expect(modeOf(path.join(home, 'state.db'))).toBe('0600');
    expect(modeOf(home)).toBe('0700');
  });

  it('unmanaged, umask 077: 0600 for all three', () => {
    const s = scenario('S2');
    const home = makeScenarioHome(s, { root: root() });
    const child = lastJson<ChildResult>(runNode(FIXTURE, [], { umask: 0o077, env: scenarioEnv(s, home) }));
    expect(child).toEqual({ ok: true, modes: { 'state.db': '0600', 'state.db-wal': '0600', 'state.db-shm': '0600' } });
  });

  it('managed (HERMES_MANAGED=nixos), home 2770, umask 0007: 0660 for all three', () => {
    const s = scenario('S3');
    const home = makeScenarioHome(s, { root: root() });
    const child = lastJson<ChildResult>(runNode(FIXTURE, [], { umask: 0o007, env: scenarioEnv(s, home) }));
    expect(child).toEqual({ ok: true, modes: { 'state.db': '0660', 'state.db-wal': '0660', 'state.db-shm': '0660' } });
    expect(modeOf(path.join(home, 'state.db'))).toBe('0660');
    expect(modeOf(home)).toBe('2770');
  });

  it('managed with the home missing: refused (EMANAGED_MISSING), nothing created', () => {
    const s = scenario('S3');
    const r = root();
    const home = path.join(r, 'not-provisioned');
    const child = lastJson<ChildResult>(runNode(FIXTURE, [], { umask: 0o007, env: scenarioEnv(s, home) }));
    expect(child.ok).toBe(false);
    expect(child.code).toBe('EMANAGED_MISSING');
    expect(fs.readdirSync(r)).toEqual([]);
  });
});
