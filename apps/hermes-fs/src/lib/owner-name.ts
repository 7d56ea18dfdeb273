/** Names an owner in a message: `uid 1020 (hermes)`, the name from NSS (getent) or /etc/passwd. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

function fromGetent(uid: number): string | null | undefined {
  try {
    const out = execFileSync('getent', ['passwd', String(uid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5_000 });
    const f = out.split('\n')[0]?.split(':') ?? [];
    return f[0] !== undefined && f[0] !== '' && f[2] === String(uid) ? f[0] : null;
  } catch (err) {
    // getent exits 2 for a uid without an entry; missing (ENOENT): ask the files instead.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : null;
  }
}

function fromPasswdFile(uid: number): string | null {
  try {
    for (const line of fs.readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f.length >= 4 && f[2] === String(uid) && f[0] !== undefined && f[0] !== '') return f[0];
    }
  } catch {
    // no readable /etc/passwd: the uid alone is named
  }
  return null;
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
