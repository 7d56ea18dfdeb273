/**
 * hermes-fs as a library: the same operations the CLI runs, for scripts and tests.
 */
export { runMatrix, type MatrixCell, type MatrixOptions, type MatrixReport, type CrossUidRow } from './matrix/run.js';
export { CELLS, EXPECTED, MATRIX_ARTIFACTS, MATRIX_SCENARIOS, type CellId, type MatrixArtifact, type MatrixScenario, type ScenarioId } from './matrix/scenarios.js';
export { runDoctor, doctorExitCode, type DoctorOptions } from './doctor/audit.js';
export type { Change, DoctorReport, Finding, FindingType, Severity, SpoolSummary } from './doctor/types.js';
export { EXIT, type ErrorDocument, type ExitCode } from './lib/output.js';
export {
  provisionNixos,
  provisionRegistry,
  provisionSystemd,
  provisionTmpfiles,
  type InstallJson,
  type ProvisionNixosDocument,
  type ProvisionRegistryDocument,
  type ProvisionSystemdDocument,
  type ProvisionTmpfilesDocument,
  type SystemdInput,
} from './provision/run.js';
export { directoryPlan, plannedKinds, type InstallType, type PlannedDir } from './provision/plan.js';
export type { InstallInput } from './provision/install.js';
export { main } from './program.js';
export { termSafe, type TermSafeOptions } from './lib/term.js';
