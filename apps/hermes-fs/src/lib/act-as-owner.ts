/**
 * The parent half of "root acts as the home's owner for content" (logrotate's `su` directive is the model).
 *
 * A content command (`pending list|show|recover|export|prune`, `save`) run by root on a home another uid owns
 * does not run as root: hermes-fs checks the path to the home (fs-policy's chain check: every directory above
 * it owned by root or the owner and writable by nobody else), opens the home itself without following a link,
 * takes the owner from that descriptor's `fstat`, and re-runs itself with the same arguments as that owner
 * (uid, gid, supplementary groups; see acting-uid.ts for the switch). A group member's link then leads only
 * where the owner could go anyway. Root's own process only waits: stdio is shared, SIGINT/SIGTERM/SIGHUP are
 * passed on, and its exit is the child's.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHomeChainSync } from '@hermes/fs-policy';
import { ACT_AS_ENV, type ActingIdentity, type ActingMarker } from './acting-uid.js';
import { CliError, EXIT, stderrLine } from './output.js';
import { passwdFromFile, passwdRecord } from './owner-name.js';

/** Whose identity a command's work runs with when root starts it. */
export type Actor = 'owner' | 'invoker';

/** The owner's identity as the group database describes it. */
export interface OwnerIdentity {
  readonly uid: number;
  /** The primary gid from the passwd entry; the home's gid when the uid has none. */
  readonly gid: number;
  /** Supplementary groups: the owner's groups, plus the home's group, plus the primary gid (sorted, unique). */
  readonly groups: readonly number[];
  /** The passwd name, or null when the uid has no entry. */
  readonly name: string | null;
}

/** The home as root checked it: path, identity and owner. */
export interface CheckedHome {
  readonly home: string;
  readonly dev: bigint;
  readonly ino: bigint;
  readonly uid: number;
  readonly gid: number;
}

/** The built CLI (dist/bin.js), re-run as the owner. */
const BIN = fileURLToPath(new URL('../bin.js', import.meta.url));

/** Signals passed on to the child (the ones an operator or a service manager sends to stop a command). */
const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

let invocation: readonly string[] = process.argv;

/** Records the argv `main()` was called with: the re-run gets exactly these arguments. */
export function setInvocation(argv: readonly string[]): void {
  invocation = [...argv];
}

const euid = (): number => (typeof process.geteuid === 'function' ? process.geteuid() : -1);

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

/**
 * The home as root may act on it: the chain check (only root and the home's owner trusted; `HERMES_UID` is not
 * consulted), then the home opened `O_DIRECTORY|O_NOFOLLOW` (a home that is itself a link is opened at its
 * resolved path) and `fstat`ed; the descriptor must be the directory the chain check ended on. Throws the
 * chain check's FsPolicyError (EUNSAFE_PATH, EDANGEROUS_HOME, …) or a CliError `EHOME_CHANGED` (exit 2).
 */
export function checkHomeAsRoot(home: string): CheckedHome {
  const chained = checkHomeChainSync(home, {});
  let target = home;
  try {
    if (fs.lstatSync(home).isSymbolicLink()) target = fs.realpathSync(home);
  } catch (err) {
    throw new CliError(`cannot use the Hermes home ${home}: ${codeOf(err)} while resolving it`, { code: codeOf(err), path: home, exitCode: EXIT.error, cause: err });
  }
  const C = fs.constants;
  let fd: number;
  try {
    fd = fs.openSync(target, C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW);
  } catch (err) {
    throw new CliError(`cannot open the Hermes home ${home} (${codeOf(err)})`, {
      code: codeOf(err),
      path: home,
      hint: 'the home changed while it was being checked: check who can write the directories above it, then run again',
      exitCode: EXIT.error,
      cause: err,
    });
  }
  let st: fs.BigIntStats;
  try {
    st = fs.fstatSync(fd, { bigint: true });
  } finally {
    fs.closeSync(fd);
  }
  if (Number(st.dev) !== chained.dev || Number(st.ino) !== chained.ino) {
    throw new CliError(`the Hermes home ${home} was replaced while it was being checked (EHOME_CHANGED)`, {
      code: 'EHOME_CHANGED',
      path: home,
      hint: 'someone can rename directories on the way to the home: run hermes-fs doctor on it, then run again',
      exitCode: EXIT.error,
    });
  }
  return { home, dev: st.dev, ino: st.ino, uid: Number(st.uid), gid: Number(st.gid) };
}

/** Runs a lookup tool; undefined when it is not installed (ENOENT), the process result otherwise. */
function lookup(file: string, args: readonly string[]): { status: number; stdout: string } | undefined {
  try {
    return { status: 0, stdout: execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }) };
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return undefined;
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number') return { status, stdout: '' };
    throw new CliError(`cannot look up the groups of the home's owner with ${file}: ${codeOf(err)}`, {
      code: 'EACT_AS_LOOKUP',
      hint: `run as the home's owner: sudo -u '#<uid>' hermes-fs …`,
      exitCode: EXIT.error,
      cause: err,
    });
  }
}

/** The groups listing `name` as a member in /etc/group (when id is not installed). */
function groupsFromFiles(name: string): number[] {
  const out: number[] = [];
  for (const line of fs.readFileSync('/etc/group', 'utf8').split('\n')) {
    const f = line.split(':');
    if (f.length >= 4 && /^\d+$/.test(f[2] ?? '') && (f[3] ?? '').split(',').includes(name)) out.push(Number(f[2]));
  }
  return out;
}

/**
 * The owner's identity as `su` would set it: the passwd entry's primary gid and the groups the group database
 * gives the name (`getent passwd`, `id -G`: NSS, so LDAP and systemd's dynamic users count; the files when the
 * tools are missing), plus the home's group. A uid without a passwd entry gets the home's gid and nothing else.
 */
export function ownerIdentity(uid: number, homeGid: number): OwnerIdentity {
  let entry: { name: string; gid: number } | undefined;
  const pw = lookup('getent', ['passwd', String(uid)]);
  if (pw === undefined) entry = passwdFromFile(uid);
  else if (pw.status === 0) entry = passwdRecord(pw.stdout.split('\n')[0] ?? '', uid);
  if (entry === undefined) return { uid, gid: homeGid, groups: [homeGid], name: null };
  let groups: number[];
  const id = lookup('id', ['-G', '--', entry.name]);
  if (id === undefined) groups = groupsFromFiles(entry.name);
  else if (id.status === 0) groups = id.stdout.trim().split(/\s+/).filter((g) => /^\d+$/.test(g)).map(Number);
  else {
    throw new CliError(`cannot list the groups of uid ${String(uid)} (${entry.name}): id exited with ${String(id.status)}`, {
      code: 'EACT_AS_LOOKUP',
      hint: `run as the home's owner: sudo -u '#${String(uid)}' hermes-fs …`,
      exitCode: EXIT.error,
    });
  }
  const all = [...new Set([entry.gid, homeGid, ...groups])].sort((a, b) => a - b);
  return { uid, gid: entry.gid, groups: all, name: entry.name };
}

/**
 * Decides whether this run must switch to the home's owner: only when this process is root, the command's
 * work is content (`actor: 'owner'`) and the home (checked by {@link checkHomeAsRoot}) belongs to another uid.
 * A root-owned home and a non-root invoker: undefined (nothing changes).
 */
export function ownerToActAs(home: string, actor: Actor): (CheckedHome & { identity: OwnerIdentity }) | undefined {
  if (euid() !== 0 || actor !== 'owner') return undefined;
  const checked = checkHomeAsRoot(home);
  if (checked.uid === 0) return undefined;
  return { ...checked, identity: ownerIdentity(checked.uid, checked.gid) };
}

/**
 * Re-runs this command as the home's owner and waits for it: the same arguments, stdio shared, SIGINT, SIGTERM
 * and SIGHUP passed on; `HERMES_UID`/`HERMES_GID` are not passed (the child is the owner: there is nothing to
 * chown to). Resolves to the child's exit code; when the child was killed by a forwarded signal, this process
 * ends by the same signal (so a shell sees Ctrl-C as Ctrl-C).
 */
export function runAsOwner(plan: CheckedHome & { identity: OwnerIdentity }, options: { debug: boolean }): Promise<number> {
  const marker: ActingMarker = {
    v: 1,
    uid: plan.identity.uid,
    gid: plan.identity.gid,
    groups: plan.identity.groups,
    home: path.resolve(plan.home),
    dev: plan.dev.toString(),
    ino: plan.ino.toString(),
    ppid: process.pid,
  };
  const env: NodeJS.ProcessEnv = { ...process.env, [ACT_AS_ENV]: JSON.stringify(marker) };
  delete env.HERMES_UID;
  delete env.HERMES_GID;
  if (options.debug) {
    const who = plan.identity.name === null ? `uid ${String(marker.uid)} (no passwd entry)` : `uid ${String(marker.uid)} (${plan.identity.name})`;
    stderrLine(`hermes-fs: debug: root acts as the home's owner: ${who}, gid ${String(marker.gid)}, groups ${marker.groups.join(',')}`);
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, BIN, ...invocation.slice(2)], { stdio: 'inherit', env });
    const forward = (signal: NodeJS.Signals): void => {
      try {
        child.kill(signal);
      } catch {
        // the child is gone already: its exit is on its way
      }
    };
    for (const s of FORWARDED) process.on(s, forward);
    const done = (): void => {
      for (const s of FORWARDED) process.off(s, forward);
    };
    child.on('error', (err) => {
      done();
      reject(
        new CliError(`cannot start hermes-fs as the home's owner uid ${String(marker.uid)}: ${err.message}`, {
          code: codeOf(err),
          hint: `run as the home's owner: sudo -u '#${String(marker.uid)}' hermes-fs …`,
          exitCode: EXIT.error,
          cause: err,
        }),
      );
    });
    child.on('exit', (code, signal) => {
      done();
      if (signal !== null && FORWARDED.includes(signal)) {
        process.kill(process.pid, signal);
        return;
      }
      resolve(code ?? 128 + (signal === null ? 0 : os.constants.signals[signal]));
    });
  });
}

/**
 * In the re-run process: the home the parent checked, verified to be the same directory still (exit 2
 * `EHOME_CHANGED` otherwise). Returns the home to use.
 */
export function verifyActingHome(identity: ActingIdentity): string {
  let st: fs.BigIntStats;
  try {
    st = fs.statSync(identity.home, { bigint: true });
  } catch (err) {
    throw new CliError(`cannot use the Hermes home ${identity.home} as uid ${String(identity.uid)} (${codeOf(err)})`, {
      code: codeOf(err),
      path: identity.home,
      hint: "the home's owner must be able to search every directory above it",
      exitCode: EXIT.error,
      cause: err,
    });
  }
  if (st.dev.toString() !== identity.dev || st.ino.toString() !== identity.ino) {
    throw new CliError(`the Hermes home ${identity.home} was replaced after root checked it (EHOME_CHANGED)`, {
      code: 'EHOME_CHANGED',
      path: identity.home,
      hint: 'run again; if it repeats, run hermes-fs doctor on the home',
      exitCode: EXIT.error,
    });
  }
  return identity.home;
}
