import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastJson, makeScenarioHome, modeOf, runNode, scenario, scenarioEnv, type ScenarioId } from '@hermes/test-utils';
import { fixture } from './helpers.js';

// The table of docs/permissions.md, literally: sessions/saved/ and the snapshot. Note S5: HERMES_HOME_MODE does not apply to
// sessions/saved/ (nothing is served from it), and S4's pre-existing 0750 directory is left alone.
const EXPECTED: Record<ScenarioId, { savedDir: string; snapshots: string[] }> = {
  S1: { savedDir: '0700', snapshots: ['0600', '0600', '0600'] },
  S2: { savedDir: '0700', snapshots: ['0600', '0600', '0600'] },
  S3: { savedDir: '2770', snapshots: ['0600', '0600', '0600'] },
  S4: { savedDir: '0750', snapshots: ['0600', '0600', '0600'] },
  S5: { savedDir: '0700', snapshots: ['0600', '0600', '0600'] },
};

// sessions/ itself is created as fs-policy's `sessions` kind, a peer of the home that honours
// HERMES_HOME_MODE (S5: 0701); S4's sessions/ pre-exists, so it is not listed.
const EXPECTED_SESSIONS: Partial<Record<ScenarioId, string>> = { S1: '0700', S2: '0700', S3: '2770', S5: '0701' };

interface ChildResult {
  results: { path: string; format: string; mode: number; bytes: number }[];
}

describe('docs/permissions.md: sessions/saved/ and the snapshot, each scenario in its own process', () => {
  for (const id of ['S1', 'S2', 'S3', 'S4', 'S5'] as const) {
    it(`${id}: ${scenario(id).title}`, () => {
      const s = scenario(id);
      const home = makeScenarioHome(s, { preexisting: ['sessions/saved'] });
      const r = runNode(fixture('save.mjs'), ['async'], { umask: s.umask, env: scenarioEnv(s, home) });
      expect(r.status, r.stderr).toBe(0);
      const { results } = lastJson<ChildResult>(r);
      const saved = path.join(home, 'sessions', 'saved');
      expect(results.map((x) => path.dirname(x.path))).toEqual([saved, saved, saved]);
      expect(results.map((x) => path.extname(x.path))).toEqual(['.json', '.md', '.html']);
      expect(results.map((x) => x.mode)).toEqual([0o600, 0o600, 0o600]);
      expect({ savedDir: modeOf(saved), snapshots: results.map((x) => modeOf(x.path)) }).toEqual(EXPECTED[id]);
      const sessions = EXPECTED_SESSIONS[id];
      if (sessions !== undefined) expect(modeOf(path.join(home, 'sessions'))).toBe(sessions);
    });
  }

  it('S1 through the synchronous form: the same modes', () => {
    const s = scenario('S1');
    const home = makeScenarioHome(s);
    const r = runNode(fixture('save.mjs'), ['sync'], { umask: s.umask, env: scenarioEnv(s, home) });
    expect(r.status, r.stderr).toBe(0);
    const { results } = lastJson<ChildResult>(r);
    expect([modeOf(path.join(home, 'sessions', 'saved')), ...results.map((x) => modeOf(x.path))]).toEqual([
      '0700',
      '0600',
      '0600',
      '0600',
    ]);
  });
});
