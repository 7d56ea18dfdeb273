/** Runs one scenario under the recorder, enumerates its crash states under a model and checks each one. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setFaultHook } from '@hermes/fs-policy/testing';
import { crashStates, type CrashState, DEFAULT_LIMITS, type Limits, type ModelName } from './model.js';
import { describeOp, unnamedName } from './ops.js';
import { Recorder, type Recording } from './recorder.js';
import type { Scenario } from './scenario.js';
import { describe, digest, entries, materialize } from './tree.js';

export interface Violation {
  readonly messages: readonly string[];
  readonly state: CrashState;
}

export interface CheckResult {
  readonly protocol: string;
  readonly form: string;
  readonly model: ModelName;
  readonly mutation: string | undefined;
  /** Operations the model replays (syscalls that changed the tree, fsyncs, store commits, promises). */
  readonly ops: number;
  readonly syscalls: number;
  /** Crash points: every prefix of the operation log, the empty one included. */
  readonly crashPoints: number;
  /** Distinct crash states checked (the same tree counts again only under different promises). */
  readonly states: number;
  readonly violations: number;
  /** The violation with the shortest prefix, and among those the fewest lost operations. */
  readonly minimal: Violation | undefined;
  readonly recording: Recording;
  readonly error: string | undefined;
}

export interface RunOptions {
  readonly models: readonly ModelName[];
  readonly mutation?: string | undefined;
  readonly limits?: Limits;
  /** Keep the scratch directory (for debugging). */
  readonly keep?: boolean;
}

function better(a: Violation, b: Violation | undefined): boolean {
  if (b === undefined) return true;
  if (a.state.cut !== b.state.cut) return a.state.cut < b.state.cut;
  return a.state.lost.length < b.state.lost.length;
}

/** Records one run of the scenario, then checks its crash states under each model. */
export async function runScenario(scenario: Scenario, options: RunOptions): Promise<CheckResult[]> {
  const mutation = options.mutation === undefined ? undefined : scenario.mutations?.find((m) => m.name === options.mutation);
  if (options.mutation !== undefined && mutation === undefined) {
    throw new Error(`crashcheck: ${scenario.protocol} has no mutation ${options.mutation}`);
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-crashcheck-'));
  const root = path.join(work, 'root');
  try {
    fs.mkdirSync(root);
    await scenario.setup(root);
    const rec = new Recorder(root, {
      ...(scenario.exclude === undefined ? {} : { exclude: scenario.exclude }),
      ...(mutation?.drop === undefined ? {} : { drop: mutation.drop }),
      ...(mutation?.rewrite === undefined ? {} : { rewrite: mutation.rewrite }),
      ...(mutation?.defer === undefined ? {} : { defer: mutation.defer }),
      tmpfile: scenario.tmpfile === true,
    });
    setFaultHook(rec.hook);
    let runError: unknown;
    try {
      await scenario.run(root, rec, mutation?.name);
    } catch (err) {
      runError = err;
    } finally {
      setFaultHook(undefined);
    }
    const recording = rec.finish();
    const problems = [...recording.problems];
    if (runError !== undefined) problems.unshift(`the protocol failed while recorded: ${runError instanceof Error ? runError.message : JSON.stringify(runError)}`);
    if ((mutation?.drop !== undefined || mutation?.rewrite !== undefined || mutation?.defer !== undefined) && rec.dropped === 0) problems.push(`mutation ${mutation.name} changed nothing: it no longer matches the protocol`);
    const results: CheckResult[] = [];
    for (const model of options.models) {
      const base = {
        protocol: scenario.protocol,
        form: scenario.form,
        model,
        mutation: mutation?.name,
        ops: recording.ops.length,
        syscalls: recording.syscalls.length,
        crashPoints: recording.ops.length + 1,
        recording,
      };
      if (problems.length > 0) {
        results.push({ ...base, states: 0, violations: 0, minimal: undefined, error: problems.join('; ') });
        continue;
      }
      results.push(await checkStates(scenario, recording, model, work, options.limits ?? DEFAULT_LIMITS, base));
    }
    return results;
  } finally {
    if (options.keep !== true) fs.rmSync(work, { recursive: true, force: true });
  }
}

async function checkStates(
  scenario: Scenario,
  recording: Recording,
  model: ModelName,
  work: string,
  limits: Limits,
  base: Omit<CheckResult, 'states' | 'violations' | 'minimal' | 'error' | 'model'> & { model: ModelName },
): Promise<CheckResult> {
  const seen = new Set<string>();
  let states = 0;
  let violations = 0;
  let minimal: Violation | undefined;
  let n = 0;
  try {
    for (const state of crashStates(recording, model, limits)) {
      const key = `${digest(state.tree)}|${JSON.stringify(state.db)}|${String(state.marks.length)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      states++;
      if (states > limits.maxStates) throw new Error(`more than ${String(limits.maxStates)} distinct crash states: raise the bound or shrink the workload`);
      const stateDir = path.join(work, `state-${model}-${String(n)}`);
      const scratch = path.join(work, `scratch-${model}-${String(n)}`);
      n++;
      materialize(state.tree, stateDir);
      fs.mkdirSync(scratch);
      try {
        const messages = await scenario.check({ dir: stateDir, state, model, recording, scratch });
        if (messages.length > 0) {
          violations++;
          const v = { messages, state };
          if (better(v, minimal)) minimal = v;
        }
      } finally {
        fs.rmSync(stateDir, { recursive: true, force: true });
        fs.rmSync(scratch, { recursive: true, force: true });
      }
    }
  } catch (err) {
    return { ...base, states, violations, minimal, error: err instanceof Error ? err.message : String(err) };
  }
  return { ...base, states, violations, minimal, error: undefined };
}

/** The recorded operations, one line each, as they were named when they ran; `lost` marks those a state lost. */
export function describeLog(rec: Recording, cut: number, lost: ReadonlySet<number> = new Set()): string[] {
  const names = new Map<number, string>();
  names.set(rec.initial.root, '.');
  for (const e of entries(rec.initial)) if (!names.has(e.ino)) names.set(e.ino, e.rel);
  const nameOf = (ino: number): string => names.get(ino) ?? rec.names.get(ino) ?? `<inode ${String(ino)}>`;
  const at = (parent: number, name: string): string => (nameOf(parent) === '.' ? name : `${nameOf(parent)}/${name}`);
  const lines: string[] = [];
  rec.ops.slice(0, cut).forEach((op, i) => {
    const sys = op.sys >= 0 ? rec.syscalls[op.sys] : undefined;
    const via = sys === undefined ? '' : `   [${sys.step}: ${sys.op}(${sys.args}) = ${sys.result}]`;
    lines.push(`${lost.has(i) ? 'x' : ' '} #${String(i).padStart(2, '0')} ${describeOp(op, nameOf)}${via}`);
    if (op.kind === 'mkdir' || op.kind === 'create') names.set(op.ino, at(op.parent, op.name));
    else if (op.kind === 'tmpfile') names.set(op.ino, unnamedName(nameOf(op.dir)));
    else if (op.kind === 'link' && nameOf(op.ino).startsWith('<unnamed ')) names.set(op.ino, at(op.parent, op.name));
    else if (op.kind === 'rename') names.set(op.ino, at(op.toParent, op.toName));
  });
  return lines;
}

/** The minimal violation in words: the promise broken, the state a reboot finds, and the sequence that led there. */
export function explain(result: CheckResult): string[] {
  const v = result.minimal;
  if (v === undefined) return [];
  const rec = result.recording;
  const lines: string[] = [];
  lines.push(`${result.protocol} (${result.form}, ${result.model} model${result.mutation === undefined ? '' : `, mutation ${result.mutation}`}):`);
  for (const m of v.messages) lines.push(`  violated: ${m}`);
  lines.push(`  crash after operation ${String(v.state.cut)} of ${String(rec.ops.length)}; the state a reboot finds:`);
  const tree = describe(v.state.tree);
  for (const l of tree.length === 0 ? ['(empty)'] : tree) lines.push(`    ${l}`);
  if (v.state.db.length > 0 || rec.ops.some((o) => o.kind === 'db-commit')) lines.push(`    database: ${String(v.state.db.length)} transaction(s) durable`);
  lines.push('  the operations issued before the crash (x = not persisted in this state):');
  for (const l of describeLog(rec, v.state.cut, new Set(v.state.lost))) lines.push(`    ${l}`);
  for (const p of v.state.partial) lines.push(`    partly persisted: ${p}`);
  return lines;
}
