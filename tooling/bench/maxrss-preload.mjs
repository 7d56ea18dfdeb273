// Loaded with `node --import` into a benchmarked process: on exit, appends the process's peak RSS (getrusage
// maxrss, bytes) to the file named by HERMES_BENCH_RSS_FILE. Measures a whole process, the CLI included.
import * as fs from 'node:fs';

const file = process.env.HERMES_BENCH_RSS_FILE;
if (file !== undefined && file !== '') {
  process.on('exit', () => {
    fs.appendFileSync(file, `${process.resourceUsage().maxRSS * 1024}\n`);
  });
}
