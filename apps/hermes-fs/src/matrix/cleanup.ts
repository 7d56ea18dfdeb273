/** What the matrix must remove whatever happens: its temp homes and its throwaway accounts. */
import * as fs from 'node:fs';
import { stopChildren } from './spawn.js';
import { type PlannedAccounts, removeAccounts } from './users.js';

/** Everything the matrix must remove, whatever happens (exit, error, Ctrl-C); runs once, however often it is asked. */
export class Cleanup {
  readonly paths: string[] = [];
  accounts: PlannedAccounts | null = null;
  #running: Promise<string[]> | null = null;

  /** Removes the temp homes and the throwaway accounts; resolves to what could not be removed. */
  run(): Promise<string[]> {
    this.#running ??= this.#run();
    return this.#running;
  }

  async #run(): Promise<string[]> {
    // A user that still owns a running process cannot be removed: the children go first.
    await stopChildren();
    const left: string[] = [];
    if (this.accounts !== null) left.push(...(await removeAccounts(this.accounts)));
    for (const p of this.paths) {
      try {
        fs.rmSync(p, { recursive: true, force: true });
      } catch (err) {
        left.push(`${p} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
    }
    return left;
  }
}
