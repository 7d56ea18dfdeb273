#!/usr/bin/env node
/**
 * `pnpm crashcheck`: records every write protocol in its sync and async form, enumerates the crash states the
 * persistence model allows after every prefix of its operations, checks each against the protocol's promise,
 * prints one row per protocol, and exits 1 when any state breaks a promise (2 when the check itself could not
 * run). docs/crash-model.md says what the models are and what is not covered.
 */
import { setLogger, silentLogger } from '@hermes/fs-policy';
import { type CheckResult, describeLog, explain, runScenario } from './check.js';
import { DEFAULT_LIMITS, type ModelName } from './model.js';
import { allScenarios } from './scenarios/index.js';
import { tmpfileUnavailable } from './scenarios/tmpfile.js';

interface Args {
  models: ModelName[];
  only: string[];
  mutation: string | undefined;
  json: boolean;
  log: boolean;
  keep: boolean;
  maxStates: number;
}

const USAGE = `usage: crashcheck [--model ext4|posix|all] [--only <text>]... [--mutate <name>] [--json] [--log] [--max-states <n>] [--keep]
  --model    the persistence model (default ext4: Linux ext4, data=ordered); posix: only what POSIX and fsync(2) promise
  --only     check only the protocols whose name contains <text> (repeatable)
  --mutate   run a deliberately broken protocol (the checker's own tests): no-file-fsync, no-dir-fsync,
             link-before-fsync, unlink-before-commit, chmod-widens
  --json     one JSON document instead of the table
  --log      also print each protocol's recorded operations
  --keep     keep the scratch directories`;

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { models: ['ext4'], only: [], mutation: undefined, json: false, log: false, keep: false, maxStates: DEFAULT_LIMITS.maxStates };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${String(a)} needs a value`);
      return v;
    };
    switch (a) {
      case '--model': {
        const v = value();
        if (v === 'all') args.models = ['ext4', 'posix'];
        else if (v === 'ext4' || v === 'posix') args.models = [v];
        else throw new UsageError(`unknown model ${JSON.stringify(v)}`);
        break;
      }
      case '--only':
        args.only.push(value());
        break;
      case '--mutate':
        args.mutation = value();
        break;
      case '--json':
        args.json = true;
        break;
      case '--keep':
        args.keep = true;
        break;
      case '--log':
        args.log = true;
        break;
      case '--max-states': {
        const n = Number(value());
        if (!Number.isInteger(n) || n <= 0) throw new UsageError('--max-states needs a positive integer');
        args.maxStates = n;
        break;
      }
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        throw new UsageError(`unknown argument ${JSON.stringify(a)}`);
    }
  }
  return args;
}

class UsageError extends Error {}

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}

function table(results: readonly CheckResult[]): string[] {
  const rows = results.map((r) => [
    r.protocol,
    r.form,
    r.model,
    String(r.ops),
    String(r.crashPoints),
    String(r.states),
    r.error === undefined ? String(r.violations) : 'ERROR',
  ]);
  const head = ['protocol', 'form', 'model', 'ops', 'crash points', 'states explored', 'violations'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => `| ${cells.map((c, i) => pad(c, widths[i] ?? 0)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)];
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`crashcheck: ${err.message}\n${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  setLogger(silentLogger);
  const started = Date.now();
  let scenarios = allScenarios();
  if (args.only.length > 0) scenarios = scenarios.filter((s) => args.only.some((o) => `${s.protocol} ${s.form}`.includes(o)));
  if (args.mutation !== undefined) {
    const name = args.mutation;
    scenarios = scenarios.filter((s) => s.mutations?.some((m) => m.name === name) === true);
  }
  if (scenarios.length === 0) {
    const noTmpfile = tmpfileUnavailable();
    process.stderr.write(`crashcheck: no protocol matches${noTmpfile === undefined ? '' : ` (the O_TMPFILE protocols are left out: ${noTmpfile})`}\n`);
    return 2;
  }
  const results: CheckResult[] = [];
  for (const s of scenarios) {
    results.push(...(await runScenario(s, { models: args.models, mutation: args.mutation, keep: args.keep, limits: { ...DEFAULT_LIMITS, maxStates: args.maxStates } })));
  }
  const seconds = (Date.now() - started) / 1000;
  const violations = results.reduce((n, r) => n + r.violations, 0);
  const errors = results.filter((r) => r.error !== undefined);
  if (args.json) {
    const doc = {
      models: args.models,
      mutation: args.mutation ?? null,
      seconds,
      results: results.map((r) => ({
        protocol: r.protocol,
        form: r.form,
        model: r.model,
        mutation: r.mutation ?? null,
        ops: r.ops,
        syscalls: r.syscalls,
        crashPoints: r.crashPoints,
        states: r.states,
        violations: r.violations,
        error: r.error ?? null,
        minimal:
          r.minimal === undefined
            ? null
            : { cut: r.minimal.state.cut, lost: r.minimal.state.lost, messages: r.minimal.messages, explanation: explain(r) },
      })),
    };
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  } else {
    for (const l of table(results)) process.stdout.write(`${l}\n`);
    const total = results.reduce((n, r) => n + r.states, 0);
    const noTmpfile = tmpfileUnavailable();
    if (noTmpfile !== undefined) process.stdout.write(`\nthe O_TMPFILE protocols of atomicWrite are not checked: ${noTmpfile}\n`);
    process.stdout.write(
      `\n${String(results.length)} checks, ${String(total)} crash states explored, ${String(violations)} violation(s), ${String(errors.length)} error(s) in ${seconds.toFixed(1)} s` +
        `${args.mutation === undefined ? '' : ` (mutation ${args.mutation})`}\n`,
    );
    if (args.log) {
      for (const r of results.filter((x, i) => results.findIndex((y) => y.recording === x.recording) === i)) {
        process.stdout.write(`\n${r.protocol} (${r.form}): ${String(r.syscalls)} syscalls, ${String(r.ops)} operations\n`);
        for (const l of describeLog(r.recording, r.recording.ops.length)) process.stdout.write(`  ${l}\n`);
      }
    }
    for (const r of results) {
      if (r.error !== undefined) process.stdout.write(`\nERROR ${r.protocol} (${r.form}, ${r.model}): ${r.error}\n`);
      if (r.minimal !== undefined) process.stdout.write(`\nminimal crash state — ${explain(r).join('\n')}\n`);
    }
  }
  if (errors.length > 0) return 2;
  return violations > 0 ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`crashcheck: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  },
);
