/** Whose files root may write into or replace: root and the home's owner (threat model rule 4). */
import { errnoCode, toPolicyError } from '../errors.js';
import { trustedOwners } from '../heldfile.js';
import type { HermesEnvironment } from '../env.js';
import { call, type Plan } from './io.js';
import type { Reached } from './reach.js';
import { type Held, statOf } from './resolve.js';

/**
 * The uid of the home's owner when this process is root, else undefined. Taken from the held descriptor when
 * the operation's root is the home; otherwise (an explicit root, or a target outside the home) from the home
 * itself — never from the explicit root, which a group member may have put there. A missing home: undefined.
 * `unprivileged`: also for a process that is not root (the owners {@link trustedUseOwners} trusts).
 */
export function* homeOwnerPlan(reached: Reached, env: HermesEnvironment, held: Held, unprivileged = false): Plan<number | undefined> {
  if (reached.uid !== 0 && !unprivileged) return undefined;
  if (reached.root.path === env.home) return (yield* statOf(reached.root, held)).uid;
  try {
    return (yield* call('resolve', env.home, 'stat', env.home)).uid;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw toPolicyError(err, 'resolve', env.home, `stat of the home ${env.home}`);
  }
}

/**
 * The owners whose existing file may be handed to a library that writes into it (ensureFile): this uid, root,
 * the home's owner and HERMES_UID — the same set the database file checks use, so a group member sharing a
 * managed home can open the state.db its owner created, and nobody's file but theirs is ever used.
 */
export function trustedUseOwners(env: HermesEnvironment, homeOwner: number | undefined): ReadonlySet<number> {
  return trustedOwners(homeOwner, [env.uid]);
}
