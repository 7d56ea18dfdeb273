/** Whose files root may write into or replace: root and the home's owner (threat model rule 4). */
import { currentUid, errnoCode, toPolicyError } from '../errors.js';
import type { HermesEnvironment } from '../env.js';
import { call, type Plan } from './io.js';
import type { Reached } from './reach.js';
import { type Held, statOf } from './resolve.js';

/**
 * The uid of the home's owner when this process is root, else undefined. Taken from the held descriptor when
 * the operation's root is the home; otherwise (an explicit root, or a target outside the home) from the home
 * itself — never from the explicit root, which a group member may have put there. A missing home: undefined.
 */
export function* homeOwnerPlan(reached: Reached, env: HermesEnvironment, held: Held): Plan<number | undefined> {
  if (currentUid() !== 0) return undefined;
  if (reached.root.path === env.home) return (yield* statOf(reached.root, held)).uid;
  try {
    return (yield* call('resolve', env.home, 'stat', env.home)).uid;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw toPolicyError(err, 'resolve', env.home, `stat of the home ${env.home}`);
  }
}
