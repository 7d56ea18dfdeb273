// The library side of B7: @hermes/gateway recoverPending into @hermes/session-db, nothing else, in its own
// process (run with maxrss-preload.mjs, as the CLI is).
import { setLogger, silentLogger } from '../../packages/fs-policy/dist/index.js';
import { recoverPending } from '../../packages/gateway/dist/index.js';
import { openSessionDb } from '../../packages/session-db/dist/index.js';

setLogger(silentLogger);
const [home, count] = process.argv.slice(2);
const db = openSessionDb({ home });
const r = recoverPending({ home, store: db, logger: silentLogger });
db.close();
if (r.inserted.length !== Number(count)) throw new Error(`inserted ${r.inserted.length} of ${count}`);
