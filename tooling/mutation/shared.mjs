// Options every mutation-testing config shares (see docs/testing.md). Paths are relative to the repository
// root, where `pnpm mutate` runs Stryker.

/**
 * The Stryker config of one package: its vitest project runs against each mutant of `mutate`; reports and the
 * incremental file go to reports/mutation/<name>/ (not committed).
 * @param {{ name: string, mutate: string[], timeoutMS?: number }} options
 * @returns {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
// timeoutMS: a mutant is "timed out" (counted as detected: a loop that never ends) when its run takes longer than
// the unmutated run × 1.5 plus this. The runs here take 2–10 s; 15 s leaves room for a loaded machine without
// spending a minute on every infinite loop a mutant makes.
export function packageConfig({ name, mutate, timeoutMS = 15_000 }) {
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
