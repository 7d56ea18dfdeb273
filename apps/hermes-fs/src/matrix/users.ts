/**
 * Real throwaway users for the cross-uid rows (root only): one fresh group and two members created with
 * groupadd/useradd, removed with userdel/groupdel when the matrix ends — also on failure or Ctrl-C.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';

export interface ThrowawayUser {
  readonly name: string;
  readonly uid: number;
}

export interface ThrowawayUsers {
  readonly group: string;
  readonly gid: number;
  readonly users: readonly ThrowawayUser[];
  /** Removes the users and the group; returns what could not be removed. */
  remove(): string[];
}

function idOf(args: string[]): number {
  return Number(execFileSync('id', args, { encoding: 'utf8' }).trim());
}

function nologinShell(): string {
  for (const s of ['/usr/sbin/nologin', '/sbin/nologin', '/bin/false']) if (fs.existsSync(s)) return s;
  return '/bin/false';
}

export function createThrowawayUsers(count: number): ThrowawayUsers {
  const tag = randomBytes(4).toString('hex');
  const group = `hfsx${tag}`;
  execFileSync('groupadd', [group], { stdio: 'pipe' });
  const gid = Number(execFileSync('getent', ['group', group], { encoding: 'utf8' }).split(':')[2]);
  const users: ThrowawayUser[] = [];
  const remove = (): string[] => {
    const left: string[] = [];
    for (const u of users) if (spawnSync('userdel', [u.name], { stdio: 'pipe' }).status !== 0) left.push(`user ${u.name}`);
    if (spawnSync('groupdel', [group], { stdio: 'pipe' }).status !== 0) left.push(`group ${group}`);
    return left;
  };
  try {
    const shell = nologinShell();
    for (let i = 0; i < count; i++) {
      const name = `${group}${String.fromCharCode(97 + i)}`;
      execFileSync('useradd', ['-M', '-N', '-g', group, '-s', shell, name], { stdio: 'pipe' });
      users.push({ name, uid: idOf(['-u', name]) });
    }
  } catch (err) {
    remove();
    throw err;
  }
  return { group, gid, users, remove };
}
