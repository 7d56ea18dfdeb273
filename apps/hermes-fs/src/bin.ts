#!/usr/bin/env node
// The identity comes first: when root re-runs hermes-fs as a home's owner, the switch to the owner's groups,
// gid and uid happens here, before the program is even loaded (see lib/acting-uid.ts).
import { ActingRefusal, actingIdentity, adoptActingIdentity } from './lib/acting-uid.js';
import type * as Program from './program.js';

/** Reports a refusal to start (exit 2); plain stderr when even the reporter cannot be loaded. */
async function refuse(refusal: ActingRefusal): Promise<number> {
  try {
    const { refuseStart } = await import('./lib/act-as-owner-refusal.js');
    return refuseStart(refusal, process.argv);
  } catch {
    process.stderr.write(`hermes-fs: error: ${refusal.message}\nhint: ${refusal.hint}\n`);
    return 2;
  }
}

async function start(): Promise<number> {
  try {
    adoptActingIdentity();
  } catch (err) {
    if (err instanceof ActingRefusal) return refuse(err);
    throw err;
  }
  let program: typeof Program;
  try {
    program = await import('./program.js');
  } catch (err) {
    // In the re-run process the likely reason is an install the home's owner may not read: say so.
    if (actingIdentity() === undefined) throw err;
    const detail = err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err);
    const code = (err as { code?: unknown } | null)?.code;
    return refuse(
      new ActingRefusal(
        `cannot load hermes-fs as uid ${String(process.geteuid?.())} (the home's owner): ${detail}${typeof code === 'string' ? ` (${code})` : ''}`,
        'EACT_AS_LOAD',
        "install hermes-fs where every uid can read it (a global npm prefix such as /usr/lib/node_modules, or the Nix store), or run it as the home's owner",
      ),
    );
  }
  return program.main(process.argv);
}

process.exitCode = await start();
