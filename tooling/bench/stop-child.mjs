// Child of the stop benchmark (stop-deadline.mjs): holds N undelivered messages of one session, installs the
// shutdown hook with a budget, prints READY, and is stopped by the parent's SIGTERM — through the hook's signal
// path ('signal'), or by another SIGTERM listener registered before the hook that calls process.exit(0) ('exit':
// the hook's 'exit' listener does the whole stop). Prints `STOP {…}` (the hook's own figures) before it exits.
import { setLogger, silentLogger } from '../../packages/fs-policy/dist/index.js';
import { flushOverflow, installShutdownHook } from '../../packages/gateway/dist/index.js';

setLogger(silentLogger);
const [mode = 'signal', count = '2000', budget = '5000'] = process.argv.slice(2);
const events = Array.from({ length: Number(count) }, (_, i) => ({
  text: `message ${i} ${'x'.repeat(200)}`,
  session_id: 'bench',
  timestamp: 1_700_000_000 + i * 0.001,
}));
if (mode === 'exit') process.on('SIGTERM', () => process.exit(0));
installShutdownHook({
  flush: () => flushOverflow({ 'agent:main:telegram:dm:bench': events }),
  budgetMs: Number(budget),
  onComplete: (o) => {
    let inBatch = 0;
    for (const r of o.reports) for (const w of r.written) if (w.batch !== undefined) inBatch++;
    process.stdout.write(`STOP ${JSON.stringify({ elapsedMs: o.elapsedMs, messages: o.messages, written: o.written, complete: o.complete, inBatch })}\n`);
  },
});
setInterval(() => undefined, 1000);
process.stdout.write('READY\n');
