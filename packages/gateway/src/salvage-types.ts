/** The options and the report of a salvage of temp files ({@link salvageTemps} in salvage.ts). */
import type { GatewayLogger } from './log.js';
import type { SpoolLocationOptions } from './spool.js';

export interface SalvageOptions extends SpoolLocationOptions {
  logger?: GatewayLogger;
  /**
   * A temp whose writer cannot be checked from here — it was taken in another pid namespace (a container
   * sharing the volume), or the name carries no pid (the Python reference's) — is left alone until its last
   * write is this old (default {@link DEFAULT_SALVAGE_MIN_AGE_MS}). A temp whose writer is alive (its pid, in
   * this namespace, held by a process that started before the temp's last write) is never taken over, whatever
   * its age: a stopped writer resumes and renames it.
   */
  minAgeMs?: number;
  /** The clock, epoch milliseconds (tests). */
  now?: number;
}

/** Why a temp file was left where it is (nothing about it changed). */
export type SalvageLeftReason =
  /** Its writer is alive (stopped or not), whatever the file's age: a write in progress. */
  | 'writer-alive'
  /** Its writer cannot be checked (no pid in the name, another pid namespace) and it is younger than `minAgeMs`. */
  | 'too-recent'
  /** Another uid's file this process cannot read; that uid's recovery salvages it. */
  | 'foreign'
  /** A symbolic link, FIFO, directory… under a temp name (never followed). */
  | 'not-a-regular-file'
  /** Complete JSON that is not a spool payload, or a name that is no payload's. */
  | 'not-a-payload'
  /** A complete payload whose final name holds different bytes: both are kept for the operator. */
  | 'conflict';

export interface SalvageReport {
  readonly dir: string;
  /** Temp files found (fs-policy's and the Python reference's names). */
  scanned: number;
  /** Complete payloads now in the spool under the name they were written for. */
  readonly adopted: { readonly temp: string; readonly path: string; readonly bytes: number }[];
  /** Complete payloads whose final file already held the same bytes: the redundant temp copy was removed. */
  readonly duplicates: { readonly temp: string; readonly path: string }[];
  /** Incomplete payloads, renamed `<temp name without the dot>.partial` (never deleted). */
  readonly partial: { readonly temp: string; readonly partialPath: string; readonly bytes: number; readonly detail: string }[];
  readonly left: { readonly temp: string; readonly reason: SalvageLeftReason; readonly detail: string }[];
  readonly errors: { readonly path: string; readonly code: string; readonly message: string; readonly hint: string }[];
  /** False when the directory fsync after the renames failed. */
  durable: boolean;
}

export interface Candidate {
  readonly name: string;
  readonly target: string;
  /** The writer's pid, when the name carries one. */
  readonly pid: number | undefined;
  /**
   * Whether the writer is alive, as @hermes/fs-policy's sweep tells from the name (its pid, in its pid
   * namespace) and the file's last write (a process that started after it is a recycled pid, not the writer):
   * null when it cannot tell (another namespace, no pid in the name).
   */
  alive: boolean | null;
}
