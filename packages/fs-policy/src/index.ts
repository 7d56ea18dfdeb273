export { FsPolicyError, hintFor, isErrnoException, toPolicyError, type FsStep, type PolicyCode, type FsPolicyErrorInit } from './errors.js';
export { getLogger, setLogger, silentLogger, stderrLogger, type FsPolicyLogger, type LogFields } from './logger.js';
export {
  DEFAULT_DIR_MODE,
  detectManaged,
  expandTilde,
  interpretManagedValue,
  loadEnvironment,
  parseHomeMode,
  parseId,
  profileHome,
  readUmask,
  resolveHermesHome,
  type EnvSource,
  type HermesEnvironment,
  type LoadEnvironmentOptions,
  type ManagedInfo,
  type ManagedSource,
  type ParsedHomeMode,
} from './env.js';
export {
  ARTIFACT_KINDS,
  STANDARD_SUBDIRS,
  dirModeFor,
  fileCeilingFor,
  fileMaxModeFor,
  fileModeFor,
  formatMode,
  getKind,
  kindDir,
  listKinds,
  selectFileMode,
  type ArtifactKind,
  type ArtifactKindName,
  type FileRule,
  type KindRef,
} from './registry.js';
export {
  MANAGED_INSTALL,
  RECONCILED_WHEN_UNMANAGED,
  reconcilesExistingDir,
  registryData,
  type RegistryData,
  type RegistryKindData,
} from './registry.js';
export { secureMkdir, secureMkdirSync, type MkdirResult, type SecureMkdirOptions } from './mkdir.js';
export {
  TEMP_FILE_PATTERN,
  atomicWrite,
  atomicWriteJson,
  atomicWriteJsonSync,
  atomicWriteSync,
  bytesOf,
  fsyncDirectory,
  fsyncDirectorySync,
  serializeJson,
  type AtomicJsonOptions,
  type AtomicWriteOptions,
  type Durability,
  type WriteResult,
} from './atomic.js';
export { atomicWriteAt, atomicWriteAtSync, type AtomicWriteAtOptions } from './atomic-at.js';
export {
  appendJsonLine,
  appendJsonLineSync,
  openAppendHandle,
  openAppendHandleSync,
  privateAppend,
  privateAppendSync,
  type AppendHandle,
  type AppendOpenInfo,
  type AppendOptions,
  type AppendResult,
} from './append.js';
export {
  expectedDirMode,
  type ExpectedEntry,
  reconcileDir,
  reconcileDirSync,
  reconcileFile,
  reconcileFileSync,
  type ReconcileFileOptions,
  type ReconcileAction,
  type ReconcileOptions,
  type ReconcileResult,
} from './reconcile.js';
export { ensureHermesHome, ensureHermesHomeSync, type EnsureHomeOptions, type EnsureHomeResult } from './home.js';
export { ensureFile, ensureFileSync, type EnsureFileOptions, type EnsureFileResult } from './file.js';
export { checkHomeChainSync, holdDirectorySync, scanTreeSync, type HeldDirectory, type ScanEntry, type ScanResult, type ScanVisitor } from './scan.js';
export { MAX_TREE_DEPTH, type TooDeep } from './scan.js';
export { inspectManagedMarker, type ManagedMarker, type MarkerState } from './managed.js';
export { fsyncHeldDirectory, fsyncHeldDirectorySync, type DirIdentity } from './held-fsync.js';
export { readRegularFile, readRegularFileSync, type ReadRegularOptions, type RegularFile } from './read.js';
export { anchorMode, type AnchorMode } from './internal/anchor.js';
export { anchorInfo, type AnchorInfo } from './native.js';
export {
  bootTimeMs,
  CLOCK_TICKS_PER_SECOND,
  type Liveness,
  pidExists,
  processLiveness,
  type ProcessIdentity,
  readProcStat,
  selfIdentity,
  writerLiveness,
} from './liveness.js';
export {
  parseTempName,
  type ParsedTempName,
  pidAlive,
  sweepTempFiles,
  sweepTempFilesSync,
  type SweepOptions,
  type SweepResult,
  type TempFile,
} from './sweep.js';
export { checkEntry, fifoUnblocks, holdDatabaseFileSync, KILL_AFTER_MS, pinEntrySync, readHomeFileSync, readPinnedSync, trustedOwners, type DescriptorSnapshot, type EntryRule, type HeldDatabaseFile, type HoldDatabaseFileOptions, type HomeFile, type PinnedEntry, type ReadHomeFileOptions, type ReadPinnedOptions } from './dbfile.js';
