// Runnable transcripts in the docs: find them, run them, compare them, rewrite them.
//
// A transcript is a fenced block preceded by a marker line:
//
//   <!-- runnable -->                     (optionally: session=NAME setup="COMMAND" home=DIR)
//   ```
//   $ hermes-fs doctor --home /tmp/hermes-demo/.hermes
//   …output (stdout and stderr, as a terminal shows them)…
//   [exit 1]
//   ```
//
// Every `$ ` line is a command run by bash from the repository root; the lines after it, up to a blank line and
// the next `$ `, are what it prints, ending with `[exit N]`. Blocks of one file that name the same `session`
// share one scratch /tmp and run in file order; `setup` runs (quietly, it must exit 0) before the first command
// of its block; `home` sets HERMES_HOME from that block on (default: an empty /tmp/.docs-home/.hermes). Blocks run in a private mount namespace with a fresh tmpfs on /tmp, so the paths a transcript
// shows are the paths it used and nothing outside is touched: that needs root, `unshare` and `mount`.
//
// Before comparing, both sides go through `normalise`, which replaces what differs from run to run (durations,
// ages, dates, process ids) with placeholders; `pnpm docs:update` writes the real output back into the file.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** The built CLI every `hermes-fs` in a transcript runs. */
export const CLI = path.join(ROOT, 'apps', 'hermes-fs', 'dist', 'bin.js');

const MARKER = /^<!--\s*runnable\b(.*?)-->\s*$/;
const FENCE = /^(`{3,})([\w-]*)\s*$/;
const ATTRIBUTE = /(\w+)=(?:"([^"]*)"|(\S+))/g;

/**
 * The placeholders that `normalise` writes, each with what it stands for (docs/testing.md lists them).
 * Order matters: the more specific patterns first.
 * @type {readonly (readonly [RegExp, string, string])[]}
 */
export const PLACEHOLDERS = [
  [/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b/g, '<ISO-TIME>', 'an ISO 8601 UTC timestamp'],
  [/(?<!\d)\d{8}_\d{6}(?!\d)/g, '<YYYYMMDD_HHMMSS>', 'the date and time in a saved transcript\'s file name'],
  [/("ts":\s*)\d+(?:\.\d+)?/g, '$1<TS>', 'a payload\'s Unix timestamp'],
  [/("pid":\s*)\d+/g, '$1<PID>', 'a writer\'s process id'],
  [/("process_id":\s*)"[0-9a-f]+"/g, '$1"<PROCESS-ID>"', 'a writer\'s process token'],
  [/(\.\d+)-\d+(\.[0-9a-f]{12}\.tmp)\b/g, '$1-<PIDNS>$2', 'the pid namespace in a temp file\'s name'],
  [/^anchor mode (?:native|procfd|refuse): .*$/gm, 'anchor mode <MODE>: <WHY>', "the doctor's anchor mode and why (native where the addon is built, else procfd)"],
  [/\b\d+(?:\.\d+)? (ms|s)\b/g, '<N> $1', 'a duration'],
  [/\b\d+(?:\.\d+)? (B|KiB)\b/g, '<N> $1', 'a size below 1 MiB (a payload holds its writer\'s pid and time)'],
  [/ *\b\d+(s|m|h|d)\b(?!-)/g, ' <N>$1', 'an age (and the padding before it in a table)'],
];

/** Replaces what differs from run to run with the placeholders of {@link PLACEHOLDERS}. */
export function normalise(text) {
  let out = text;
  for (const [pattern, replacement] of PLACEHOLDERS) out = out.replace(pattern, replacement);
  return out;
}

function attributes(text) {
  const attrs = {};
  for (const m of text.matchAll(ATTRIBUTE)) attrs[m[1]] = m[2] ?? m[3];
  return attrs;
}

/**
 * Every marked block of a Markdown text. `line` is the 1-based line of the opening fence, `bodyLine` of the
 * block's first line; `body` is the block's text (lines joined with "\n", no trailing newline).
 * Throws on a marker that is not followed by a fence, or a fence that is never closed (naming the line).
 */
export function findBlocks(file, text) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = MARKER.exec(lines[i]);
    if (marker === null) continue;
    const fence = FENCE.exec(lines[i + 1] ?? '');
    if (fence === null) throw new Error(`${file}:${i + 1}: a runnable marker must be followed by a fenced block on the next line`);
    let end = i + 2;
    while (end < lines.length && lines[end].trimEnd() !== fence[1]) end++;
    if (end >= lines.length) throw new Error(`${file}:${i + 2}: the runnable block is never closed`);
    const attrs = attributes(marker[1]);
    blocks.push({
      file,
      line: i + 2,
      bodyLine: i + 3,
      bodyStart: i + 2,
      bodyEnd: end,
      session: attrs.session ?? `line ${i + 2}`,
      setup: attrs.setup,
      home: attrs.home,
      body: lines.slice(i + 2, end).join('\n'),
    });
  }
  return blocks;
}

/** The commands of a transcript body (the `$ ` lines, without the prompt). */
export function commandsOf(block) {
  const commands = block.body
    .split('\n')
    .filter((line) => line.startsWith('$ '))
    .map((line) => line.slice(2));
  if (commands.length === 0) throw new Error(`${block.file}:${block.line}: a runnable block holds no "$ " command`);
  return commands;
}

/** The environment of a transcript's commands: a fresh home and TMPDIR under the scratch /tmp, `hermes-fs` on PATH. */
function transcriptEnv(shimDir) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(npm_|pnpm_|HERMES_|VITEST|NODE_OPTIONS$|FORCE_COLOR$|COLUMNS$|LINES$)/i.test(key)) continue;
    env[key] = value;
  }
  return {
    ...env,
    PATH: `${shimDir}${path.delimiter}${env.PATH ?? ''}`,
    HOME: '/tmp/.docs-home',
    HERMES_HOME: '/tmp/.docs-home/.hermes',
    TMPDIR: '/tmp/.docs-tmp',
    COLUMNS: '80',
    TZ: 'UTC',
    LC_ALL: 'C.UTF-8',
  };
}

/**
 * Runs inside the private mount namespace (see `runSessions`): mounts the scratch /tmp, then runs every block's
 * setup and commands in order. Writes one JSON document on stdout: per block, the transcript it produced.
 */
function runInNamespace(blocks) {
  // A checkout under /tmp would be hidden by the fresh tmpfs: hold it by a descriptor first and bind it back at
  // its own path afterwards (in this private namespace only; nothing outside sees either mount). The bind names
  // the descriptor (--no-canonicalize): the path it once had now leads into the new tmpfs.
  const underTmp = ROOT === '/tmp' || ROOT.startsWith('/tmp/');
  const rootFd = underTmp ? fs.openSync(ROOT, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY) : undefined;
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'mode=1777,size=256m', 'docs-tmp', '/tmp'], { encoding: 'utf8' });
  if (mounted.status !== 0) throw new Error(`mount -t tmpfs /tmp failed (${String(mounted.status)}): ${mounted.stderr}`);
  if (rootFd !== undefined) {
    fs.mkdirSync(ROOT, { recursive: true });
    const bound = spawnSync('mount', ['--no-canonicalize', '--bind', `/proc/${String(process.pid)}/fd/${String(rootFd)}`, ROOT], { encoding: 'utf8' });
    if (bound.status !== 0) throw new Error(`mount --bind of the checkout back to ${ROOT} failed (${String(bound.status)}): ${bound.stderr}`);
    fs.closeSync(rootFd);
  }
  const shimDir = '/tmp/.docs-bin';
  for (const dir of [shimDir, '/tmp/.docs-home', '/tmp/.docs-tmp']) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(shimDir, 'hermes-fs'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"\n`, { mode: 0o755 });
  const env = transcriptEnv(shimDir);
  const results = [];
  for (const block of blocks) {
    // `home=DIR` sets HERMES_HOME for this block and the later blocks of its session.
    if (block.home !== undefined) env.HERMES_HOME = block.home;
    if (block.setup !== undefined) {
      const setup = spawnSync('bash', ['-c', block.setup], { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
      if (setup.status !== 0) {
        const why = setup.error === undefined ? `exited ${String(setup.status ?? setup.signal)}` : `could not run: ${setup.error.message}`;
        throw new Error(`${block.file}:${block.line}: setup \`${block.setup}\` ${why}:\n${setup.stdout}${setup.stderr}`);
      }
    }
    const parts = commandsOf(block).map((command) => {
      const r = spawnSync('bash', ['-c', `exec 2>&1\n${command}`], { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
      if (r.error !== undefined) throw new Error(`${block.file}:${block.line}: \`${command}\` could not run: ${r.error.message}`);
      if (/ERR_MODULE_NOT_FOUND|Cannot find module '[^']*\/dist\//.test(r.stdout)) {
        // Never recorded as a transcript: the build is incomplete (or was rebuilt while this ran).
        throw new Error(`${block.file}:${block.line}: \`${command}\` cannot load the built packages: run pnpm build, then again\n${r.stdout}`);
      }
      const out = r.stdout === '' || r.stdout.endsWith('\n') ? r.stdout : `${r.stdout}\n`;
      return `$ ${command}\n${out}[exit ${String(r.status ?? `signal ${String(r.signal)}`)}]`;
    });
    results.push(parts.join('\n\n'));
  }
  return results;
}

/**
 * Runs marked blocks and returns, per block (same order), the transcript body it produces now. Blocks are
 * grouped by file and session; each group runs in its own private mount namespace (`unshare --mount`) with a
 * fresh tmpfs on /tmp (a checkout under /tmp is bound back at its own path). Needs root, `unshare` and `mount`; throws a message naming what failed.
 */
export function runBlocks(blocks) {
  const groups = new Map();
  blocks.forEach((block, index) => {
    const key = `${block.file}\0${block.session}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push({ block, index });
  });
  const out = new Array(blocks.length);
  for (const members of groups.values()) {
    const r = spawnSync('unshare', ['--mount', '--propagation', 'private', '--', process.execPath, fileURLToPath(import.meta.url), '--in-namespace'], {
      input: JSON.stringify(members.map((m) => m.block)),
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
      timeout: 600_000,
    });
    if (r.status !== 0) {
      const first = members[0].block;
      throw new Error(`${first.file}:${first.line}: running the session "${first.session}" failed (exit ${String(r.status)}): ${r.stderr || r.error?.message}`);
    }
    const bodies = JSON.parse(r.stdout);
    members.forEach((m, i) => (out[m.index] = bodies[i]));
  }
  return out;
}

/**
 * The first line where `expected` and `actual` differ after normalisation, or undefined when they agree.
 * `line` is 1-based within the body.
 */
export function firstDrift(expected, actual) {
  const a = normalise(expected).split('\n');
  const b = normalise(actual).split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return { line: i + 1, expected: a[i] ?? '(end of block)', actual: b[i] ?? '(end of output)' };
  }
  return undefined;
}

/** The Markdown files whose blocks may be marked: README.md and docs/*.md. */
export function documentedFiles() {
  const docs = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort();
  return ['README.md', ...docs.map((f) => `docs/${f}`)];
}

/** Replaces the bodies of `blocks` (all of one file's text) with `bodies`; returns the new text. */
export function rewrite(text, blocks, bodies) {
  const lines = text.split('\n');
  for (let i = blocks.length - 1; i >= 0; i--) {
    const block = blocks[i];
    lines.splice(block.bodyStart, block.bodyEnd - block.bodyStart, ...bodies[i].split('\n'));
  }
  return lines.join('\n');
}

if (process.argv[2] === '--in-namespace') {
  const blocks = JSON.parse(fs.readFileSync(0, 'utf8'));
  process.stdout.write(JSON.stringify(runInNamespace(blocks)));
}
