/** Names an owner in a message: `uid 1020 (hermes)`, the name from NSS (getent) or /etc/passwd. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

/** The name and primary gid of `uid` in one passwd(5) record (a line of `getent passwd` or /etc/passwd). */
export function passwdRecord(line: string, uid: number): { name: string; gid: number } | undefined {
  const f = line.split(':');
  const [name, , id, gid] = f;
  if (f.length < 4 || name === undefined || name === '' || id !== String(uid) || !/^\d+$/.test(gid ?? '')) return undefined;
  return { name, gid: Number(gid) };
}

/** The passwd entry of `uid` in /etc/passwd (where NSS's getent is not installed). Throws when it cannot be read. */
export function passwdFromFile(uid: number): { name: string; gid: number } | undefined {
  for (const line of fs.readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const entry = passwdRecord(line, uid);
    if (entry !== undefined) return entry;
  }
  return undefined;
}

function fromGetent(uid: number): string | null | undefined {
  try {
    const out = execFileSync('getent', ['passwd', String(uid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5_000 });
    return passwdRecord(out.split('\n')[0] ?? '', uid)?.name ?? null;
  } catch (err) {
    // getent exits 2 for a uid without an entry; missing (ENOENT): ask the files instead.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : null;
  }
}

function fromPasswdFile(uid: number): string | null {
  try {
    return passwdFromFile(uid)?.name ?? null;
  } catch {
    return null; // no readable /etc/passwd: the uid alone is named
  }
}

/** The account name of `uid`, or null when it has none (or none can be looked up). Never throws. */
export function uidName(uid: number): string | null {
  const n = fromGetent(uid);
  return n === undefined ? fromPasswdFile(uid) : n;
}

/** `uid 1020 (hermes)`, or `uid 1020` for a uid without a name. */
export function describeUid(uid: number): string {
  const name = uidName(uid);
  return name === null ? `uid ${String(uid)}` : `uid ${String(uid)} (${name})`;
}
