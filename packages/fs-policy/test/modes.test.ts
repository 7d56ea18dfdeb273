import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastJson, makeScenarioHome, modeOf, runNode, scenario, scenarioEnv, type ScenarioId } from '@hermes/test-utils';
import { fixture } from './helpers.js';

// The table of docs/permissions.md, literally: a directory kind that honours HERMES_HOME_MODE (pending_messages/) and one that
// does not (moa-traces/), with the file modes written into them.
const EXPECTED: Record<ScenarioId, { pendingDir: string; payload: string; moaDir: string; trace: string }> = {
  S1: { pendingDir: '0700', payload: '0600', moaDir: '0700', trace: '0600' },
  S2: { pendingDir: '0700', payload: '0600', moaDir: '0700', trace: '0600' },
  S3: { pendingDir: '2770', payload: '0600', moaDir: '2770', trace: '0600' },
  S4: { pendingDir: '0750', payload: '0600', moaDir: '0750', trace: '0600' },
  S5: { pendingDir: '0701', payload: '0600', moaDir: '0700', trace: '0600' },
};

describe('the permission table (docs/permissions.md), each scenario in its own process', () => {
  for (const id of ['S1', 'S2', 'S3', 'S4', 'S5'] as const) {
    it(`${id}: ${scenario(id).title}`, () => {
      const s = scenario(id);
      const home = makeScenarioHome(s, { preexisting: ['pending_messages', 'moa-traces'] });
      const env = scenarioEnv(s, home);
      const pending = path.join(home, 'pending_messages');
      const moa = path.join(home, 'moa-traces');
      const a = runNode(fixture('write-kind.mjs'), [pending, 'pending-messages', 'pending-1.json', 'atomic'], { umask: s.umask, env });
      expect(a.status, a.stderr).toBe(0);
      const b = runNode(fixture('write-kind.mjs'), [moa, 'moa-traces', 'session.jsonl', 'append'], { umask: s.umask, env });
      expect(b.status, b.stderr).toBe(0);
      expect(lastJson<{ managed: boolean }>(a).managed).toBe(s.managed);
      expect({
        pendingDir: modeOf(pending),
        payload: modeOf(path.join(pending, 'pending-1.json')),
        moaDir: modeOf(moa),
        trace: modeOf(path.join(moa, 'session.jsonl')),
      }).toEqual(EXPECTED[id]);
    });
  }

  it('S1: every level a nested call creates is 0700, levels that existed keep their mode', () => {
    const s = scenario('S1');
    const home = makeScenarioHome(s);
    const nested = path.join(home, 'audit', 'shared', 'moa');
    const r = runNode(fixture('write-kind.mjs'), [nested, 'moa-traces', 't.jsonl', 'append'], { umask: 0o022, env: scenarioEnv(s, home) });
    expect(r.status, r.stderr).toBe(0);
    expect(lastJson<{ created: string[] }>(r).created).toEqual([home, path.join(home, 'audit'), path.join(home, 'audit', 'shared'), nested]);
    expect([modeOf(home), modeOf(path.join(home, 'audit')), modeOf(path.join(home, 'audit', 'shared')), modeOf(nested)]).toEqual([
      '0700',
      '0700',
      '0700',
      '0700',
    ]);
    expect(modeOf(path.dirname(home))).toBe('0755');
  });

  it('S3: nested levels under a setgid home inherit 2770 through the service umask', () => {
    const s = scenario('S3');
    const home = makeScenarioHome(s);
    const nested = path.join(home, 'a', 'b');
    const r = runNode(fixture('write-kind.mjs'), [nested, 'moa-traces', 't.jsonl', 'append'], { umask: 0o007, env: scenarioEnv(s, home) });
    expect(r.status, r.stderr).toBe(0);
    expect([modeOf(home), modeOf(path.join(home, 'a')), modeOf(nested), modeOf(path.join(nested, 't.jsonl'))]).toEqual([
      '2770',
      '2770',
      '2770',
      '0600',
    ]);
  });
});
