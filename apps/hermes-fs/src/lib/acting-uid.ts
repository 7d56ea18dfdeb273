/**
 * The child half of "root acts as the home's owner" (see act-as-owner.ts for the parent half).
 *
 * When root runs a content command (`pending …`, `save`) on a home another uid owns, hermes-fs re-runs itself
 * with the same arguments and a marker in its environment. The re-run process calls
 * {@link adoptActingIdentity} first, before it loads the program or touches anything: it sets the owner's
 * supplementary groups, then the gid, then the uid (that order: each step needs the privilege the next one
 * gives up), and verifies that all of it took — real, effective and saved ids, the group list, and that uid 0
 * cannot be regained. If anything is off it refuses; it never goes on as root.
 *
 * This module imports nothing but Node built-ins: it runs before the rest of the program is loaded.
 */

/** The environment variable that carries the identity from the parent to the re-run process. */
export const ACT_AS_ENV = 'HERMES_FS_ACT_AS';

/** What the parent decided, handed to the re-run process (JSON in {@link ACT_AS_ENV}). */
export interface ActingMarker {
  readonly v: 1;
  /** The home's owner: the uid, gid and supplementary groups to take. */
  readonly uid: number;
  readonly gid: number;
  readonly groups: readonly number[];
  /** The home, resolved and checked by the parent (the child uses it instead of resolving again). */
  readonly home: string;
  /** Device and inode of the home the parent checked (decimal strings: exact beyond 2^53). */
  readonly dev: string;
  readonly ino: string;
  /** The parent's pid: a marker inherited by anything else is refused. */
  readonly ppid: number;
}

/** The identity this process took from a marker, for the rest of the program (undefined: none was asked). */
export interface ActingIdentity extends ActingMarker {
  /** What the process verified after the drop. */
  readonly verified: { readonly uid: number; readonly euid: number; readonly gid: number; readonly egid: number; readonly groups: readonly number[] };
}

/** A refused drop: the one line, the fix, and a stable code (printed by bin.ts, exit 2). */
export class ActingRefusal extends Error {
  override readonly name = 'ActingRefusal';
  constructor(
    message: string,
    readonly code: string,
    readonly hint: string,
  ) {
    super(message);
  }
}

let adopted: ActingIdentity | undefined;

/** The identity taken at start-up by {@link adoptActingIdentity}, or undefined when this process was not re-run. */
export function actingIdentity(): ActingIdentity | undefined {
  return adopted;
}

const isId = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** 32 - 1;

/** Parses the marker; throws {@link ActingRefusal} for anything malformed (never guesses an identity). */
export function parseMarker(text: string): ActingMarker {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ActingRefusal(`${ACT_AS_ENV} is not valid JSON`, 'EACT_AS_MARKER', `unset ${ACT_AS_ENV}: hermes-fs sets it itself when root acts as a home's owner`);
  }
  const m = raw as Partial<Record<keyof ActingMarker, unknown>> | null;
  const ok =
    m !== null &&
    typeof m === 'object' &&
    m.v === 1 &&
    isId(m.uid) &&
    isId(m.gid) &&
    Array.isArray(m.groups) &&
    m.groups.every(isId) &&
    typeof m.home === 'string' &&
    m.home.startsWith('/') &&
    typeof m.dev === 'string' &&
    /^\d+$/.test(m.dev) &&
    typeof m.ino === 'string' &&
    /^\d+$/.test(m.ino) &&
    isId(m.ppid);
  if (!ok) {
    throw new ActingRefusal(`${ACT_AS_ENV} does not describe an identity`, 'EACT_AS_MARKER', `unset ${ACT_AS_ENV}: hermes-fs sets it itself when root acts as a home's owner`);
  }
  return m as ActingMarker;
}

const sorted = (ids: Iterable<number>): number[] => [...new Set(ids)].sort((a, b) => a - b);

/**
 * Takes the identity named by {@link ACT_AS_ENV}, if set: setgroups, setgid, setuid — then verifies every id
 * and that uid 0 cannot be regained. Removes the marker from the environment. Returns the identity (also
 * kept for {@link actingIdentity}), undefined without a marker; throws {@link ActingRefusal} when the
 * identity cannot be taken or verified (the caller must stop: nothing may run with the old identity).
 */
export function adoptActingIdentity(env: NodeJS.ProcessEnv = process.env): ActingIdentity | undefined {
  const text = env[ACT_AS_ENV];
  if (text === undefined) return undefined;
  delete env.HERMES_FS_ACT_AS; // (= ACT_AS_ENV) nothing this process starts inherits it
  const m = parseMarker(text);
  if (m.ppid !== process.ppid) {
    throw new ActingRefusal(
      `${ACT_AS_ENV} was set by process ${String(m.ppid)}, not by this process's parent (${String(process.ppid)})`,
      'EACT_AS_MARKER',
      `unset ${ACT_AS_ENV}: hermes-fs sets it itself when root acts as a home's owner`,
    );
  }
  const want = sorted([...m.groups, m.gid]);
  const who = `uid ${String(m.uid)}, gid ${String(m.gid)}, groups ${want.join(',')}`;
  try {
    // Order matters: the group list and the gid can only be set while the process is still root.
    process.setgroups?.(want);
    process.setgid?.(m.gid);
    process.setuid?.(m.uid);
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    throw new ActingRefusal(
      `cannot take the home's owner's identity (${who}): ${err instanceof Error ? err.message : String(err)}${typeof code === 'string' ? ` (${code})` : ''}`,
      'EACT_AS_OWNER',
      "run hermes-fs as root (it switches to the home's owner itself), or as the owner: sudo -u '#" + String(m.uid) + "' hermes-fs …",
    );
  }
  const verified = {
    uid: process.getuid?.() ?? -1,
    euid: process.geteuid?.() ?? -1,
    gid: process.getgid?.() ?? -1,
    egid: process.getegid?.() ?? -1,
    groups: sorted(process.getgroups?.() ?? []),
  };
  let regained = false;
  try {
    process.seteuid?.(0);
    regained = true;
  } catch {
    // expected: the saved uid is the owner's too, so root is gone for good
  }
  const same =
    verified.uid === m.uid &&
    verified.euid === m.uid &&
    verified.gid === m.gid &&
    verified.egid === m.gid &&
    verified.groups.join(',') === want.join(',') &&
    !regained;
  if (!same) {
    throw new ActingRefusal(
      `the switch to the home's owner did not take: asked ${who}; have uid ${String(verified.uid)}/${String(verified.euid)}, gid ${String(verified.gid)}/${String(verified.egid)}, groups ${verified.groups.join(',')}${regained ? ', and uid 0 could be regained' : ''}`,
      'EACT_AS_OWNER',
      "run hermes-fs as the home's owner instead: sudo -u '#" + String(m.uid) + "' hermes-fs …",
    );
  }
  adopted = { ...m, verified };
  return adopted;
}
