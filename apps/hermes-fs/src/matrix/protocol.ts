/** What the matrix parent and its child processes exchange (one JSON argument in, one JSON line out). */
import type { CellId, MatrixArtifact, ScenarioId } from './scenarios.js';

export interface MatrixTask {
  readonly type: 'matrix';
  readonly scenario: ScenarioId;
  readonly artifacts: readonly MatrixArtifact[];
  /** A directory the child creates its fresh homes in (the parent removes it). */
  readonly root: string;
}

/** Cross-uid, first user: set the scenario's home up and flush one payload (creating pending_messages/). */
export interface CrossUidOwnerTask {
  readonly type: 'xuid-owner';
  readonly scenario: 'S1' | 'S3';
  readonly root: string;
  readonly home: string;
}

/** Cross-uid, second user: flush one payload into the home the first user set up; report the outcome. */
export interface CrossUidWriterTask {
  readonly type: 'xuid-writer';
  readonly scenario: 'S1' | 'S3';
  readonly home: string;
}

export type ChildTask = MatrixTask | CrossUidOwnerTask | CrossUidWriterTask;

export interface MeasuredCell {
  readonly id: CellId;
  /** Path relative to the home. */
  readonly path: string | null;
  /** lstat permission bits, four-digit octal; null when the path was not produced. */
  readonly mode: string | null;
  readonly error: string | null;
}

export interface ArtifactResult {
  readonly artifact: MatrixArtifact;
  readonly home: string;
  readonly cells: readonly MeasuredCell[];
  /** How the artifact was written (package call and notable details). */
  readonly note: string;
  /** The write failed: the package's error, one line. */
  readonly error: string | null;
}

export interface MatrixChildResult {
  readonly type: 'matrix';
  readonly scenario: ScenarioId;
  readonly pid: number;
  readonly umask: string;
  readonly results: readonly ArtifactResult[];
}

export interface CrossUidResult {
  readonly type: 'xuid-owner' | 'xuid-writer';
  readonly uid: number;
  readonly gid: number;
  readonly umask: string;
  /** Flush report: what was written and what failed (path, code, uid). */
  readonly written: readonly { path: string; mode: string | null; uid: number | null }[];
  readonly failed: readonly { path: string; code: string; uid: number | null; message: string }[];
  readonly dirMode: string | null;
  /** A throw out of flush (it must never throw). */
  readonly thrown: string | null;
}
