/** What a checked protocol provides: an initial tree, a recorded run, and the promise every crash state must keep. */
import type { Req } from '@hermes/fs-policy/testing';
import type { CrashState, ModelName } from './model.js';
import type { Recorder, Recording } from './recorder.js';

export interface CheckContext {
  /** The crash state, written out as a real directory tree (the counterpart of the recorded root). */
  readonly dir: string;
  readonly state: CrashState;
  readonly model: ModelName;
  readonly recording: Recording;
  /** A scratch directory the check may use (a database rebuilt for this state, a second recovery pass…). */
  readonly scratch: string;
}

/** A deliberately broken protocol, for the checker's own tests: a dropped syscall or a patched build. */
export interface Mutation {
  readonly name: string;
  readonly description: string;
  /** Requests to drop at the fault port (not performed, not recorded). */
  readonly drop?: (req: Req) => boolean;
  /** Requests to change at the fault port before they are performed (and recorded as changed). */
  readonly rewrite?: (req: Req) => Req;
  /** Requests to hold back at the fault port (`hold`) and perform right after the first later `until` request. */
  readonly defer?: { readonly hold: (req: Req) => boolean; readonly until: (req: Req) => boolean };
}

export interface Scenario {
  /** The protocol, e.g. `atomicWrite (replace)`. */
  readonly protocol: string;
  readonly form: 'sync' | 'async';
  /** The promise checked on every state, in one line (for the report). */
  readonly promise: string;
  /**
   * Records the protocol with fs-policy's unnamed temp file (`O_TMPFILE`, native layer). Otherwise the recorder
   * answers `open(O_TMPFILE)` with EOPNOTSUPP, as a filesystem without unnamed files does: the named temp.
   */
  readonly tmpfile?: boolean;
  /** Paths relative to the root that belong to another component (SQLite's files). */
  readonly exclude?: (rel: string) => boolean;
  /** Builds the initial tree under `root` (empty on entry). */
  setup(root: string): Promise<void> | void;
  /**
   * Runs the protocol with the recorder in place (the fault-port hook is installed around this call) and marks
   * every promise it makes with `rec.mark`. `mutation` is the active mutation's name, if any.
   */
  run(root: string, rec: Recorder, mutation: string | undefined): Promise<void> | void;
  /** The violations of the promise in one crash state (empty when it holds). */
  check(ctx: CheckContext): Promise<string[]> | string[];
  /** Mutations of this protocol the checker must catch (its own tests). */
  readonly mutations?: readonly Mutation[];
}
