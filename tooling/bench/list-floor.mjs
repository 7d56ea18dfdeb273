// The floor of B6: what listing a spool costs with no policy and no output — read the directory, read and
// parse every file — as a whole process, like the CLI it is compared with.
import * as fs from 'node:fs';
import * as path from 'node:path';

const dir = path.join(process.argv[2], 'pending_messages');
let n = 0;
for (const name of fs.readdirSync(dir)) {
  JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
  n++;
}
process.stdout.write(`${n}\n`);
