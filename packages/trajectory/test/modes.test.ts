import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { describeNeeds, lastJson, makeScenarioHome, modeOf, runNode, scenario, scenarioEnv, type ScenarioId } from '@hermes/test-utils';

const fixture = fileURLToPath(new URL('./fixtures/save-trajectory.mjs', import.meta.url));

/**
 * docs/permissions.md, trajectory .jsonl column, measured in a child process per scenario (the umask is per process).
 * The line is written with an explicit `filename` of `<home>/trajectories/trajectory_samples.jsonl`, so the
 * directory measured next to the file is `<home>/trajectories/` (kind `trajectories`: 0700 unmanaged, not
 * widened by HERMES_HOME_MODE; managed: the setgid home and umask 0007 decide; S4: pre-existing 0750 kept).
 */
const expected: readonly { id: ScenarioId; dir: string; file: string }[] = [
  { id: 'S1', dir: '0700', file: '0600' },
  { id: 'S2', dir: '0700', file: '0600' },
  { id: 'S3', dir: '2770', file: '0600' },
  { id: 'S4', dir: '0750', file: '0600' },
  { id: 'S5', dir: '0700', file: '0600' },
];

describeNeeds(['linux'], 'trajectory file modes across S1–S5 (child processes)', () => {
  for (const row of expected) {
    it(`${row.id}: trajectories/ ${row.dir}, trajectory_samples.jsonl ${row.file}`, () => {
      const s = scenario(row.id);
      const home = makeScenarioHome(s, { preexisting: ['trajectories'] });
      const file = path.join(home, 'trajectories', 'trajectory_samples.jsonl');
      const r = runNode(fixture, [home, file, ''], { umask: s.umask, env: scenarioEnv(s, home) });
      const out = lastJson<{ path: string; created: boolean; redirected: boolean }>(r);
      expect(out).toMatchObject({ path: file, created: true, redirected: false });
      expect(modeOf(path.join(home, 'trajectories'))).toBe(row.dir);
      expect(modeOf(file)).toBe(row.file);
      expect(fs.readFileSync(file, 'utf8')).toMatch(/^\{"conversations":\[\{"from":"human","value":"hello"\}\],"timestamp":"[^"]+","model":"hermes-test","completed":true\}\n$/);
    });
  }
});
