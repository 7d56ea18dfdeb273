// Child for B4's memory figure: RSS before recovery (modules loaded, db open) and the peak during it.
// argv: home, count, report ('full': every recovered file listed; 'counts': listCommitted false).
import { setLogger, silentLogger } from '../../packages/fs-policy/dist/index.js';
import { recoverPending } from '../../packages/gateway/dist/index.js';
import { openSessionDb } from '../../packages/session-db/dist/index.js';

setLogger(silentLogger);
const [home, count, report = 'full'] = process.argv.slice(2);
const db = openSessionDb({ home });
globalThis.gc?.();
const before = process.memoryUsage().rss;
const peakBefore = process.resourceUsage().maxRSS * 1024;
const r = recoverPending({ home, store: db, listCommitted: report !== 'counts' });
db.close();
if (r.counts.inserted !== Number(count)) throw new Error(`inserted ${r.inserted.length} of ${count}`);
const peak = process.resourceUsage().maxRSS * 1024;
const MiB = 1024 * 1024;
process.stdout.write(`${JSON.stringify({ files: Number(count), report, beforeMiB: before / MiB, peakMiB: peak / MiB, growthMiB: (peak - Math.max(before, peakBefore)) / MiB })}\n`);
