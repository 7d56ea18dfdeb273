// Options every mutation-testing config shares (see docs/testing.md). Paths are relative to the repository
// root, where `pnpm mutate` runs Stryker.

/**
 * The Stryker config of one package: its vitest project runs against each mutant of `mutate`; reports and the
 * incremental file go to reports/mutation/<name>/ (not committed).
 * @param {{ name: string, mutate: string[], timeoutMS?: number }} options
 * @returns {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export function packageConfig({ name, mutate, timeoutMS = 60_000 }) {
  const reports = `reports/mutation/${name}`;
  return {
    $schema: '../../node_modules/@stryker-mutator/core/schema/stryker-schema.json',
    packageManager: 'pnpm',
    plugins: ['@stryker-mutator/vitest-runner'],
    testRunner: 'vitest',
    vitest: { configFile: `tooling/mutation/${name}.vitest.config.mjs`, dir: `packages/${name}` },
    mutate,
    coverageAnalysis: 'perTest',
    incremental: true,
    incrementalFile: `${reports}/incremental.json`,
    reporters: ['clear-text', 'progress', 'html', 'json'],
    htmlReporter: { fileName: `${reports}/index.html` },
    jsonReporter: { fileName: `${reports}/mutation.json` },
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
    tempDirName: '.stryker-tmp',
    cleanTempDir: true,
    timeoutMS,
    thresholds: { high: 85, low: 70, break: null },
  };
}
