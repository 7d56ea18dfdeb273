import * as path from 'node:path';
import { lastJson, makeScenarioHome, modeOf, runNode, scenario, scenarioEnv, type ScenarioId } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import type { FlushReport } from '../src/index.js';
import { fixture, spoolDir, tempDir } from './helpers.js';

// The table of docs/permissions.md, literally: pending_messages/ and payload per scenario.
const EXPECTED: [ScenarioId, string, string][] = [
  ['S1', '0700', '0600'],
  ['S2', '0700', '0600'],
  ['S3', '2770', '0600'],
  ['S4', '0750', '0600'],
  ['S5', '0701', '0600'],
];

describe('pending_messages/ and payload modes, S1–S5 (each in its own child process)', () => {
  it.each(EXPECTED)('%s: dir %s, payload %s', (id, dirMode, fileMode) => {
    const s = scenario(id);
    const home = makeScenarioHome(s, { root: tempDir(), preexisting: ['pending_messages'] });
    const r = runNode(fixture('flush.mjs'), [JSON.stringify({ pending: { 'agent:main:telegram:dm:1': `in ${id}` } })], {
      umask: s.umask,
      env: scenarioEnv(s, home),
    });
    const report = lastJson<FlushReport>(r);
    expect(report.failed).toEqual([]);
    expect(report.written).toHaveLength(1);
    expect(modeOf(spoolDir(home))).toBe(dirMode);
    expect(modeOf(report.written[0]?.path ?? '')).toBe(fileMode);
    expect(path.dirname(report.written[0]?.path ?? '')).toBe(spoolDir(home));
  });
});
