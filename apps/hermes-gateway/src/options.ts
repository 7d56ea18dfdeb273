/** Command-line flags and environment variables of the `hermes-gateway` bin. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { parseLogLevel } from './log.js';
import type { GatewayOptions } from './service.js';

export const USAGE = `usage: hermes-gateway [options]

  --home DIR            the Hermes home (default: $HERMES_HOME, else ~/.hermes)
  --temp-home           a fresh home under the system temp dir (printed in the ready log line)
  --host ADDR           listen address (default 127.0.0.1; $HERMES_GATEWAY_HOST)
  --port N              port, 0 = any free one (default 8642; $HERMES_GATEWAY_PORT)
  --print-url           print the URL on stdout once ready
  --ready-file FILE     write {"url","pid"} to FILE once ready
  --commit-window-ms N  extra group-commit window (default 0; $HERMES_GATEWAY_COMMIT_WINDOW_MS)
  --turn-latency-ms N   the offline runner's latency per turn (default 0)
  --reply-template T    the offline runner's reply, {text} and {session} replaced (default "echo: {text}")
  --moa-advisors N      fan each turn out to N offline advisors and trace it (@hermes/moa-trace)
  --stop-budget-ms N    the stop's budget (default: config.yaml gateway.shutdown_flush_budget_ms, 5000)
  --log-level L         debug | info | warn | error (default info; $HERMES_GATEWAY_LOG_LEVEL)
  --help

exit status: 0 help; 2 refused to start (the home's gateway lock is held, a bad flag); 78 config.yaml invalid;
143 / 130 stopped by SIGTERM / SIGINT with every message durable; 74 some message not on disk (the stop contract).`;

/** A flag the bin cannot use: exit status 2 with the message. */
export class UsageError extends Error {}

function integer(name: string, text: string | undefined, min: number, max: number): number | undefined {
  if (text === undefined || text === '') return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${name} must be an integer from ${String(min)} to ${String(max)}, not ${JSON.stringify(text)}`);
  return n;
}

/** The service options from `argv` (without node and the script) and `env`; `help: true` for --help. */
export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv): { help: true } | { help: false; options: GatewayOptions } {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      options: {
        home: { type: 'string' },
        'temp-home': { type: 'boolean' },
        host: { type: 'string' },
        port: { type: 'string' },
        'print-url': { type: 'boolean' },
        'ready-file': { type: 'string' },
        'commit-window-ms': { type: 'string' },
        'turn-latency-ms': { type: 'string' },
        'reply-template': { type: 'string' },
        'moa-advisors': { type: 'string' },
        'stop-budget-ms': { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean' },
      },
    }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.help === true) return { help: true };
  if (parsed['temp-home'] === true && parsed.home !== undefined) throw new UsageError('--home and --temp-home exclude each other');
  const home =
    parsed['temp-home'] === true
      ? path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-gateway-')), 'home')
      : parsed.home ?? env.HERMES_HOME ?? path.join(os.homedir(), '.hermes');
  const levelText = parsed['log-level'] ?? env.HERMES_GATEWAY_LOG_LEVEL;
  const logLevel = parseLogLevel(levelText);
  if (levelText !== undefined && logLevel === undefined) throw new UsageError(`--log-level must be debug, info, warn or error, not ${JSON.stringify(levelText)}`);
  const plant = env.HERMES_GATEWAY_PLANT;
  if (plant !== undefined && plant !== '' && plant !== 'ack-before-fsync') throw new UsageError(`HERMES_GATEWAY_PLANT knows only ack-before-fsync, not ${JSON.stringify(plant)}`);
  const stopBudgetMs = integer('--stop-budget-ms', parsed['stop-budget-ms'], 1, 600_000);
  const options: GatewayOptions = {
    home,
    host: parsed.host ?? env.HERMES_GATEWAY_HOST ?? '127.0.0.1',
    port: integer('--port', parsed.port ?? env.HERMES_GATEWAY_PORT, 0, 65535) ?? 8642,
    printUrl: parsed['print-url'] === true,
    ...(parsed['ready-file'] === undefined ? {} : { readyFile: path.resolve(parsed['ready-file']) }),
    commitWindowMs: integer('--commit-window-ms', parsed['commit-window-ms'] ?? env.HERMES_GATEWAY_COMMIT_WINDOW_MS, 0, 10_000) ?? 0,
    turnLatencyMs: integer('--turn-latency-ms', parsed['turn-latency-ms'], 0, 600_000) ?? 0,
    ...(parsed['reply-template'] === undefined ? {} : { replyTemplate: parsed['reply-template'] }),
    moaAdvisors: integer('--moa-advisors', parsed['moa-advisors'], 0, 16) ?? 0,
    ...(stopBudgetMs === undefined ? {} : { stopBudgetMs }),
    ...(logLevel === undefined ? {} : { logLevel }),
    plantAckBeforeFsync: plant === 'ack-before-fsync',
  };
  return { help: false, options };
}
