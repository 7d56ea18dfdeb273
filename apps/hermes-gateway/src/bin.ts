#!/usr/bin/env node
import { jsonLogger } from './log.js';
import { parseOptions, USAGE, UsageError } from './options.js';
import { startGateway, StartError } from './service.js';

const log = jsonLogger('info');

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseOptions(process.argv.slice(2), process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`hermes-gateway: ${err.message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  if (parsed.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  try {
    await startGateway(parsed.options);
  } catch (err) {
    if (err instanceof StartError) {
      log.error(`refused to start: ${err.message}`, { code: err.code, hint: err.hint, home: parsed.options.home });
      process.exit(err.exitCode);
    }
    const e = err as { code?: unknown; message?: unknown };
    log.error(`failed to start: ${String(e.message)}`, { code: e.code, home: parsed.options.home });
    process.exit(1);
  }
}

await main();
