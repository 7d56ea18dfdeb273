// A real release, end to end: a throwaway copy of this repository runs `changeset version` and `changeset
// publish` against a local registry (Verdaccio on loopback), then fresh npm and pnpm projects install the
// packages from that registry the way a user would and run them. Slow (better-sqlite3 compiles for the npm
// project): not part of `pnpm test`; `pnpm test:release` and CI run it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import { request as httpRequest } from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const registryPackage = path.join(root, 'tooling', 'release-test', 'verdaccio');
const ROOT_LICENSE = fs.readFileSync(path.join(root, 'LICENSE'), 'utf8'); // each package carries a copy: MIT asks for the text with every copy

const VERSION = '0.1.0';
const REPOSITORY = 'git+https://github.com/hermes-agent/hermes-persistence.git';

// Every published package and its directory. Literal on purpose: adding a package means adding it here.
const PUBLISHED: readonly (readonly [name: string, dir: string])[] = [
  ['@hermes/fs-policy', 'packages/fs-policy'],
  ['@hermes/fs-policy-linux-x64-gnu', 'packages/fs-policy-linux-x64-gnu'],
  ['@hermes/redact', 'packages/redact'],
  ['@hermes/config', 'packages/config'],
  ['@hermes/session-db', 'packages/session-db'],
  ['@hermes/gateway', 'packages/gateway'],
  ['@hermes/cli', 'packages/cli'],
  ['@hermes/trajectory', 'packages/trajectory'],
  ['@hermes/moa-trace', 'packages/moa-trace'],
  ['hermes-fs', 'apps/hermes-fs'],
  ['hermes-gateway', 'apps/hermes-gateway'],
];
const NAMES = PUBLISHED.map(([name]) => name);

/** fs-policy's prebuilt addon for this machine (Linux x64, glibc): an optional dependency, a `.node` file and no JavaScript. */
const PLATFORM_PACKAGE = '@hermes/fs-policy-linux-x64-gnu';
/** The packages with a JavaScript entry point: every published one but the platform package. */
const MODULES = NAMES.filter((name) => name !== PLATFORM_PACKAGE);

/** A package's CHANGELOG.md after its first release: one line, no list of changes made before it. */
const INITIAL_CHANGELOG = (name: string): string => `# ${name}\n\n## ${VERSION}\n\n### Minor Changes\n\n- Initial release\n`;

// The @hermes packages each published manifest depends on (docs/permissions.md has no say here: this is the
// dependency graph as released, with the ranges `workspace:^` must become).
const INTERNAL_DEPENDENCIES: Readonly<Record<string, readonly string[]>> = {
  '@hermes/fs-policy': [],
  '@hermes/fs-policy-linux-x64-gnu': [],
  '@hermes/redact': [],
  '@hermes/config': ['@hermes/fs-policy'],
  '@hermes/session-db': ['@hermes/fs-policy'],
  '@hermes/gateway': ['@hermes/fs-policy'],
  '@hermes/cli': ['@hermes/fs-policy', '@hermes/redact'],
  '@hermes/trajectory': ['@hermes/fs-policy'],
  '@hermes/moa-trace': ['@hermes/fs-policy', '@hermes/redact'],
  'hermes-fs': [
    '@hermes/cli',
    '@hermes/config',
    '@hermes/fs-policy',
    '@hermes/gateway',
    '@hermes/moa-trace',
    '@hermes/redact',
    '@hermes/session-db',
    '@hermes/trajectory',
  ],
  'hermes-gateway': [
    '@hermes/cli',
    '@hermes/config',
    '@hermes/fs-policy',
    '@hermes/gateway',
    '@hermes/moa-trace',
    '@hermes/session-db',
    '@hermes/trajectory',
  ],
};

// The optionalDependencies of each published manifest (absent: none). The platform package is never a plain
// dependency: its os/cpu/libc fields make npm and pnpm skip it on any other machine.
const OPTIONAL_DEPENDENCIES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  '@hermes/fs-policy': { [PLATFORM_PACKAGE]: `^${VERSION}` },
};

// docs/permissions.md, the permission table, in the order `hermes-fs matrix` measures it.
const MATRIX_CELLS = [
  'pending_messages/',
  'payload',
  'moa-traces/',
  'trace',
  'sessions/saved/',
  'snapshot',
  'trajectory',
  'state.db',
  'state.db-wal',
  'state.db-shm',
] as const;
const MATRIX_TABLE: Readonly<Record<'S1' | 'S2' | 'S3' | 'S4' | 'S5', readonly string[]>> = {
  S1: ['0700', '0600', '0700', '0600', '0700', '0600', '0600', '0600', '0600', '0600'],
  S2: ['0700', '0600', '0700', '0600', '0700', '0600', '0600', '0600', '0600', '0600'],
  S3: ['2770', '0600', '2770', '0600', '2770', '0600', '0600', '0660', '0660', '0660'],
  S4: ['0750', '0600', '0750', '0600', '0750', '0600', '0600', '0660', '0660', '0660'],
  S5: ['0701', '0600', '0700', '0600', '0700', '0600', '0600', '0600', '0600', '0600'],
};

interface RunOptions {
  cwd: string;
  env?: Record<string, string>;
  /** Variables removed from the child's environment (after `env` is applied). */
  unset?: readonly string[];
  /** Exit codes that count as success (default [0]). */
  ok?: readonly number[];
  /** Kill the child (SIGTERM) and fail after this many milliseconds (default: no limit). */
  timeoutMs?: number;
}

interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

/**
 * The environment every child runs with: no variables a parent pnpm/npm script set, no workspace binaries, and
 * no NODE_PATH (pnpm's bin shims set it to the workspace's node_modules/.pnpm/node_modules, where every workspace
 * package is linked: a consumer's require() would find what its own install lacks).
 */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(npm_|pnpm_)/i.test(key) || key === 'INIT_CWD' || key === 'NODE_PATH') continue;
    env[key] = value;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => !dir.startsWith(root))
    .join(path.delimiter);
  return { ...env, NO_COLOR: '1', TURBO_TELEMETRY_DISABLED: '1', TURBO_NO_UPDATE_NOTIFIER: '1', ...extra };
}

function run(command: string, args: readonly string[], options: RunOptions): RunResult {
  const unset = new Set(options.unset ?? []);
  const env = Object.fromEntries(Object.entries(cleanEnv(options.env)).filter(([key]) => !unset.has(key)));
  const result = spawnSync(command, args, {
    cwd: options.cwd,
    env,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
  });
  if (result.error !== undefined) throw result.error;
  const status = result.status ?? -1;
  if (!(options.ok ?? [0]).includes(status)) {
    const tail = (text: string): string => text.split('\n').slice(-40).join('\n');
    throw new Error(
      `${command} ${args.join(' ')} (in ${options.cwd}) exited ${String(status)} ${result.signal ?? ''}\n` +
        `--- stdout\n${tail(result.stdout)}\n--- stderr\n${tail(result.stderr)}`,
    );
  }
  return { status, stdout: result.stdout, stderr: result.stderr };
}

function readJson(file: string): unknown {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** The `version` of a package.json. */
function versionOf(file: string): string {
  return (readJson(file) as { version: string }).version;
}

interface HttpResponse {
  status: number;
  body: Buffer;
}

/**
 * One HTTP request (to the local registry or a server under test) on a fresh connection (`agent: false`,
 * `Connection: close`): no idle keep-alive socket is ever reused, so a request cannot race the server closing one.
 */
function http(method: 'GET' | 'PUT' | 'POST', url: string, json?: unknown, headers: Record<string, string> = {}): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const payload = json === undefined ? undefined : Buffer.from(JSON.stringify(json));
    const req = httpRequest(url, {
      method,
      agent: false,
      headers: {
        accept: 'application/json',
        ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(payload.length) }),
        ...headers,
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
      });
    });
    req.end(payload);
  });
}

function parse(response: HttpResponse): unknown {
  return JSON.parse(response.body.toString('utf8'));
}

async function freeLoopbackPort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no loopback port');
  return address.port;
}

/** Files below `dir`, relative, without descending into node_modules. */
function walk(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...walk(path.join(dir, entry.name), rel));
    else out.push(rel);
  }
  return out;
}

/** Real directories holding an `@hermes/fs-policy` package anywhere in a project's node_modules. */
function fsPolicyCopies(project: string): string[] {
  const found = run('find', ['node_modules', '-path', '*/@hermes/fs-policy/package.json'], { cwd: project }).stdout;
  const dirs = found
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => fs.realpathSync(path.dirname(path.join(project, line))));
  return [...new Set(dirs)].sort();
}

/** `hermes-fs matrix --json` output: valid against its schema, and the literal table of docs/permissions.md. */
function expectMatrix(out: string, schemaFile: string): void {
  const report = JSON.parse(out) as {
    ok: boolean;
    cells: { scenario: keyof typeof MATRIX_TABLE; cell: string; expected: string; measured: string; ok: boolean }[];
    crossUid: { ran: boolean; rows: { scenario: string; expected: string; outcome: string; ok: boolean }[] };
    summary: unknown;
  };
  const validate = new Ajv({ allErrors: true, strict: false }).compile(readJson(schemaFile) as object);
  expect(validate(report), JSON.stringify(validate.errors)).toBe(true);

  const measured = Object.fromEntries(report.cells.map((c) => [`${c.scenario} ${c.cell}`, c.measured]));
  const expected = Object.fromEntries(
    Object.entries(MATRIX_TABLE).flatMap(([scenario, modes]) => MATRIX_CELLS.map((cell, i) => [`${scenario} ${cell}`, modes[i]])),
  );
  expect(measured).toEqual(expected);
  expect(report.cells).toHaveLength(50);
  expect(report.ok).toBe(true);
  if (process.getuid?.() === 0) {
    expect(report.crossUid.ran).toBe(true);
    expect(report.crossUid.rows.map((r) => [r.scenario, r.outcome, r.ok])).toEqual([
      ['S3', 'written', true],
      ['S1', 'failure reported', true],
    ]);
    expect(report.summary).toEqual({ cells: 50, passed: 50, failed: 0, crossUidFailed: 0 });
  } else {
    expect(report.crossUid.ran).toBe(false);
  }
}

// Run in each consumer project: loads the app's own @hermes/fs-policy next to the packages that consume it
// and reports whether they share one instance — where each one's fs-policy resolves to, whether an error
// session-db's fs-policy throws is an instance of the app's FsPolicyError, and whether the app's setLogger
// receives the warning fs-policy logs while session-db opens a database.
const INSTANCE_PROBE = `
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { FsPolicyError, setLogger } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';

const require = createRequire(import.meta.url);
const resolved = { app: fs.realpathSync(require.resolve('@hermes/fs-policy')) };
for (const name of ${JSON.stringify(NAMES.filter((n) => n !== '@hermes/fs-policy' && INTERNAL_DEPENDENCIES[n]?.includes('@hermes/fs-policy')))}) {
  const from = createRequire(fs.realpathSync(require.resolve(name + '/package.json')));
  resolved[name] = fs.realpathSync(from.resolve('@hermes/fs-policy'));
}
const lines = [];
setLogger({ debug() {}, info() {}, warn(m) { lines.push(m); }, error(m) { lines.push(m); } });
process.env.HERMES_HOME_MODE = 'not-a-mode';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-probe-'));
fs.writeFileSync(path.join(tmp, 'a-file'), '');
let error = null;
try {
  openSessionDb({ home: tmp, path: path.join(tmp, 'a-file', 'state.db') }).close();
} catch (err) {
  error = { name: err?.name ?? null, code: err?.code ?? null, instanceOfAppFsPolicyError: err instanceof FsPolicyError };
}
fs.mkdirSync(path.join(tmp, 'home'));
openSessionDb({ home: path.join(tmp, 'home') }).close();
fs.rmSync(tmp, { recursive: true, force: true });
console.log(JSON.stringify({ resolved, error, loggerLines: lines }));
`;

interface ProbeResult {
  resolved: Record<string, string>;
  error: { name: string | null; code: string | null; instanceOfAppFsPolicyError: boolean } | null;
  loggerLines: string[];
}

// The consumer's own TypeScript: imports from every published entry point, type-checked with skipLibCheck
// false (so every published .d.ts and every type it pulls in is checked).
const CONSUMER_TS = `
import { FsPolicyError, loadEnvironment, type HermesEnvironment } from '@hermes/fs-policy';
import * as testing from '@hermes/fs-policy/testing';
import { redactSecrets } from '@hermes/redact';
import { parseConfig, type HermesConfig } from '@hermes/config';
import { openSessionDb, type SessionDb, type SessionExport } from '@hermes/session-db';
import * as gateway from '@hermes/gateway';
import { saveConversation } from '@hermes/cli';
import { saveTrajectory, toShareGpt } from '@hermes/trajectory';
import { createMoaTracer, moaTraceSettingsFromConfig, type MoaTraceSettings } from '@hermes/moa-trace';
import { runMatrix, type MatrixReport } from 'hermes-fs';
import schema from 'hermes-fs/schema/matrix.schema.json' with { type: 'json' };
import { parseOptions, startGateway, type GatewayOptions, type RunningGateway } from 'hermes-gateway';

export function wire(home: string): { env: HermesEnvironment; db: SessionDb; exported: SessionExport | undefined } {
  const env = loadEnvironment({ home });
  const db = openSessionDb({ home, env });
  const id = db.createSession({ source: 'cli' });
  db.appendMessage({ sessionId: id, role: 'user', content: redactSecrets('hello') });
  return { env, db, exported: db.exportSession(id) };
}
export const config: HermesConfig = parseConfig('moa:\\n  save_traces: true\\n').config;
export const settings: MoaTraceSettings = moaTraceSettingsFromConfig(config);
export const tracer = createMoaTracer({ home: '/tmp/h', ...settings });
export const matrix: () => Promise<MatrixReport> = () => runMatrix({});
export const parsed = parseOptions(['--temp-home', '--port', '0'], {});
export const serve: (options: GatewayOptions) => Promise<RunningGateway> = startGateway;
export const loaded = [FsPolicyError, testing, gateway, saveConversation, saveTrajectory, toShareGpt, schema.title] as const;
`;

const TSCONFIG_NODENEXT = {
  compilerOptions: {
    target: 'ES2023',
    lib: ['ES2023'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    types: ['node'],
    strict: true,
    resolveJsonModule: true,
    skipLibCheck: false,
    noEmit: true,
  },
  include: ['consumer.ts'],
};
const TSCONFIG_BUNDLER = {
  compilerOptions: { ...TSCONFIG_NODENEXT.compilerOptions, module: 'ESNext', moduleResolution: 'Bundler' },
  include: ['consumer.ts'],
};

const ESM_IMPORTS = `
for (const name of ${JSON.stringify([...MODULES, '@hermes/fs-policy/testing'])}) {
  const m = await import(name);
  console.log(name, Object.keys(m).length);
}
const schema = await import('hermes-fs/schema/matrix.schema.json', { with: { type: 'json' } });
console.log('schema', schema.default.title);
`;
const CJS_REQUIRES = `
for (const name of ${JSON.stringify([...MODULES, '@hermes/fs-policy/testing'])}) {
  console.log(name, Object.keys(require(name)).length);
}
console.log('schema', require('hermes-fs/schema/matrix.schema.json').title);
for (const name of ${JSON.stringify(MODULES)}) console.log('version', name, require(name + '/package.json').version);
`;

/** The variables that choose fs-policy's anchor mode or addon: unset wherever a test measures the default. */
const ANCHOR_VARIABLES = ['HERMES_FS_ANCHOR', 'HERMES_FS_NATIVE_PATH'] as const;
const ANCHOR_PROBE = `import { anchorInfo } from '@hermes/fs-policy'; console.log(JSON.stringify(anchorInfo()));`;
/** anchorInfo() where the platform package loads, on a kernel with openat2 (5.6 and later). */
const NATIVE_ANCHOR = { mode: 'native', reason: 'the addon is loaded and the kernel has openat2', openat2: true } as const;

// A smoke suite run by a consumer project: in a fresh directory (argv[2]) with a private home (0700), an atomic
// JSON write, two private appends, a secure mkdir and a write through a link that leaves the home. Prints the
// anchor mode, every line fs-policy logged, each result, and the mode (and content) of everything in the
// directory afterwards.
const SMOKE = `
import * as fs from 'node:fs';
import * as path from 'node:path';
import { anchorInfo, atomicWriteJsonSync, FsPolicyError, loadEnvironment, privateAppendSync, secureMkdirSync, setLogger } from '@hermes/fs-policy';

const logs = [];
setLogger({ debug() {}, info(m) { logs.push('info: ' + m); }, warn(m) { logs.push('warn: ' + m); }, error(m) { logs.push('error: ' + m); } });
const base = process.argv[2];
const home = path.join(base, 'home');
const outside = path.join(base, 'outside');
fs.mkdirSync(base, { mode: 0o700 });
fs.mkdirSync(home, { mode: 0o700 });
fs.mkdirSync(outside, { mode: 0o700 });
const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false' }, umask: 0o022 });
const rel = (p) => path.relative(base, p);
const octal = (mode) => (mode & 0o7777).toString(8).padStart(4, '0');
const anchor = anchorInfo();

const w = atomicWriteJsonSync(path.join(home, 'pending_messages', 'pending-1.json'), { text: 'hi' }, { kind: 'pending-messages', env });
const write = { path: rel(w.path), bytes: w.bytes, mode: octal(w.mode), createdFile: w.createdFile, createdDirs: w.createdDirs.map(rel), durable: w.durable, warnings: w.warnings };
const appends = ['{"turn":1}\\n', '{"turn":2}\\n'].map((line) => {
  const a = privateAppendSync(path.join(home, 'moa-traces', 's1.jsonl'), line, { kind: 'moa-traces', env });
  return { path: rel(a.path), bytes: a.bytes, created: a.created, mode: octal(a.mode), createdDirs: a.createdDirs.map(rel) };
});
const m = secureMkdirSync(path.join(home, 'sessions', 'saved'), 'saved-sessions', { env });
const mkdir = { path: rel(m.path), created: m.created.map(rel), mode: octal(m.mode), warnings: m.warnings };

fs.writeFileSync(path.join(outside, 'victim.json'), 'precious', { mode: 0o600 });
fs.symlinkSync(path.join(outside, 'victim.json'), path.join(home, 'escape.json'));
let escape = 'written';
try {
  atomicWriteJsonSync(path.join(home, 'escape.json'), { pwned: true }, { kind: 'sessions', env });
} catch (err) {
  if (!(err instanceof FsPolicyError)) throw err;
  escape = { code: err.code, path: rel(err.path) };
}

const tree = {};
const contents = {};
(function walk(dir) {
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = fs.lstatSync(p);
    if (st.isSymbolicLink()) tree[rel(p)] = 'link ' + rel(fs.readlinkSync(p));
    else if (st.isDirectory()) {
      tree[rel(p)] = 'dir ' + octal(st.mode);
      walk(p);
    } else {
      tree[rel(p)] = 'file ' + octal(st.mode);
      contents[rel(p)] = fs.readFileSync(p, 'utf8');
    }
  }
})(base);
console.log(JSON.stringify({ anchor, logs, write, appends, mkdir, escape, tree, contents }));
`;

interface SmokeReport {
  anchor: { mode: string; reason: string; openat2: boolean };
  logs: string[];
  write: unknown;
  appends: unknown;
  mkdir: unknown;
  escape: unknown;
  tree: Record<string, string>;
  contents: Record<string, string>;
}

/** What SMOKE must print in every anchor mode: the same results, the same modes, the link refused. */
const SMOKE_RESULTS: Omit<SmokeReport, 'anchor' | 'logs'> = {
  write: {
    path: 'home/pending_messages/pending-1.json',
    bytes: 19,
    mode: '0600',
    createdFile: true,
    createdDirs: ['home/pending_messages'],
    durable: 'file+dir',
    warnings: [],
  },
  appends: [
    { path: 'home/moa-traces/s1.jsonl', bytes: 11, created: true, mode: '0600', createdDirs: ['home/moa-traces'] },
    { path: 'home/moa-traces/s1.jsonl', bytes: 11, created: false, mode: '0600', createdDirs: [] },
  ],
  mkdir: { path: 'home/sessions/saved', created: ['home/sessions', 'home/sessions/saved'], mode: '0700', warnings: [] },
  escape: { code: 'ESYMLINK_ESCAPE', path: 'home/escape.json' },
  tree: {
    home: 'dir 0700',
    'home/escape.json': 'link outside/victim.json',
    'home/moa-traces': 'dir 0700',
    'home/moa-traces/s1.jsonl': 'file 0600',
    'home/pending_messages': 'dir 0700',
    'home/pending_messages/pending-1.json': 'file 0600',
    'home/sessions': 'dir 0700',
    'home/sessions/saved': 'dir 0700',
    outside: 'dir 0700',
    'outside/victim.json': 'file 0600',
  },
  contents: {
    'home/moa-traces/s1.jsonl': '{"turn":1}\n{"turn":2}\n',
    'home/pending_messages/pending-1.json': '{\n  "text": "hi"\n}\n',
    'outside/victim.json': 'precious',
  },
};

describe('a release through a real registry', { concurrent: false }, () => {
  let work: string;
  let repo: string;
  let registryUrl: string;
  let registry: ChildProcess | undefined;
  let registryLog = '';
  let token: string;
  const projects: Record<'npm' | 'pnpm', string> = { npm: '', pnpm: '' };

  async function stopRegistry(): Promise<void> {
    const child = registry;
    if (child === undefined) return;
    registry = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-release-'));
    // 0755: the matrix's cross-uid rows run installed code as throwaway users, who must reach node_modules.
    fs.chmodSync(work, 0o755);

    // A throwaway clone: this tree's tracked and unignored files, as a fresh git repository.
    repo = path.join(work, 'repo');
    const listed = run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root }).stdout;
    for (const rel of new Set(listed.split('\0').filter((f) => f !== ''))) {
      const from = path.join(root, rel);
      if (!fs.existsSync(from)) continue;
      fs.mkdirSync(path.dirname(path.join(repo, rel)), { recursive: true });
      fs.cpSync(from, path.join(repo, rel), { verbatimSymlinks: true });
    }
    const git = { GIT_AUTHOR_NAME: 'release test', GIT_AUTHOR_EMAIL: 'release@test.invalid', GIT_COMMITTER_NAME: 'release test', GIT_COMMITTER_EMAIL: 'release@test.invalid' };
    run('git', ['init', '-q', '-b', 'main'], { cwd: repo });
    run('git', ['add', '-A'], { cwd: repo });
    run('git', ['commit', '-q', '-m', 'chore: the tree under release'], { cwd: repo, env: git });
    run('pnpm', ['install', '--frozen-lockfile', '--prefer-offline', '--reporter=append-only'], { cwd: repo });

    // The registry: Verdaccio from its own lockfile, installed into this run's directory (never a workspace
    // dependency), on a loopback port. @hermes/*, hermes-fs and hermes-gateway are never proxied: they come from this run only.
    const verdaccio = path.join(work, 'verdaccio');
    fs.mkdirSync(verdaccio);
    for (const f of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(registryPackage, f), path.join(verdaccio, f));
    run('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: verdaccio });
    const port = await freeLoopbackPort();
    registryUrl = `http://127.0.0.1:${String(port)}/`;
    fs.writeFileSync(
      path.join(verdaccio, 'config.yaml'),
      [
        'storage: ./storage',
        'web:',
        '  enable: false',
        'auth:',
        '  htpasswd:',
        '    file: ./htpasswd',
        '    max_users: 1',
        'uplinks:',
        '  npmjs:',
        '    url: https://registry.npmjs.org/',
        'packages:',
        "  '@hermes/*':",
        '    access: $all',
        '    publish: $authenticated',
        "  'hermes-fs':",
        '    access: $all',
        '    publish: $authenticated',
        "  'hermes-gateway':",
        '    access: $all',
        '    publish: $authenticated',
        "  '**':",
        '    access: $all',
        '    publish: $authenticated',
        '    proxy: npmjs',
        'middlewares:',
        '  audit:',
        '    enabled: false',
        'log:',
        '  type: stdout',
        '  format: pretty',
        '  level: warn',
        '',
      ].join('\n'),
    );
    const child = spawn(
      process.execPath,
      [path.join(verdaccio, 'node_modules', 'verdaccio', 'bin', 'verdaccio'), '--config', './config.yaml', '--listen', `127.0.0.1:${String(port)}`],
      { cwd: verdaccio, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    registry = child;
    child.stdout.on('data', (chunk: Buffer) => (registryLog += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (registryLog += chunk.toString()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the registry exited ${String(child.exitCode)}:\n${registryLog}`);
      try {
        if ((await http('GET', `${registryUrl}-/ping`)).status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`the registry did not answer within 60 s:\n${registryLog}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const user = await http('PUT', `${registryUrl}-/user/org.couchdb.user:release`, { name: 'release', password: 'release-test-only' });
    const created = parse(user) as { token?: string };
    if (user.status !== 201 || created.token === undefined) throw new Error(`cannot create the publishing user: ${String(user.status)} ${JSON.stringify(created)}`);
    token = created.token;
  });

  afterAll(async () => {
    await stopRegistry();
    if (process.env.HERMES_KEEP_TEST_DIRS === undefined) fs.rmSync(work, { recursive: true, force: true });
  });

  it('changeset version takes every package from 0.0.0 to 0.1.0, as one fixed group', () => {
    for (const [name, dir] of PUBLISHED) expect(versionOf(path.join(repo, dir, 'package.json')), name).toBe('0.0.0');
    run('pnpm', ['changeset', 'version'], { cwd: repo });
    for (const [name, dir] of PUBLISHED) {
      expect(versionOf(path.join(repo, dir, 'package.json')), name).toBe(VERSION);
      // The first release says so (.changeset/changelog.cjs), instead of listing changes nobody could install.
      expect(fs.readFileSync(path.join(repo, dir, 'CHANGELOG.md'), 'utf8'), `${name} CHANGELOG.md`).toBe(INITIAL_CHANGELOG(name));
    }
    // Private tooling is not versioned, and every pending changeset was consumed.
    expect(versionOf(path.join(repo, 'tooling', 'test-utils', 'package.json'))).toBe('0.0.0');
    expect(fs.readdirSync(path.join(repo, '.changeset')).sort()).toEqual(['README.md', 'changelog.cjs', 'config.json']);
    run('git', ['add', '-A'], { cwd: repo });
    run('git', ['commit', '-q', '-m', 'chore: version packages'], {
      cwd: repo,
      env: { GIT_AUTHOR_NAME: 'release test', GIT_AUTHOR_EMAIL: 'release@test.invalid', GIT_COMMITTER_NAME: 'release test', GIT_COMMITTER_EMAIL: 'release@test.invalid' },
    });
  });

  it("the release workflow's publish script publishes the eleven packages at 0.1.0, dependencies first", async () => {
    run('pnpm', ['build', '--output-logs=errors-only'], { cwd: repo });
    fs.writeFileSync(path.join(repo, '.npmrc'), `registry=${registryUrl}\n//127.0.0.1:${new URL(registryUrl).port}/:_authToken=${token}\n`);
    // What .github/workflows/release.yml runs, without --provenance: a provenance statement needs the OIDC token
    // of a CI job, which a local registry run does not have.
    const script = ['tooling/scripts/publish.mjs', '--no-provenance', '--registry', registryUrl];
    const published = run('node', script, { cwd: repo }).stdout;
    const order = [...published.matchAll(/^publish {2}(\S+)@\S+$/gm)].map((m) => m[1] ?? '');
    console.log(`publish order: ${order.join(' ')}`);
    expect(order.slice().sort()).toEqual([...NAMES].sort());
    for (const name of NAMES) {
      for (const dep of [...(INTERNAL_DEPENDENCIES[name] ?? []), ...Object.keys(OPTIONAL_DEPENDENCIES[name] ?? {})]) {
        expect(order.indexOf(dep), `${dep} before ${name}`).toBeLessThan(order.indexOf(name));
      }
      expect(published).toContain(`New tag: ${name}@${VERSION}\n`);
    }
    expect(published).toContain('11 published, 0 already on the registry (11 public packages)\n');
    const tags = run('git', ['tag', '--list'], { cwd: repo }).stdout.trim().split('\n').sort();
    expect(tags).toEqual(NAMES.map((name) => `${name}@${VERSION}`).sort());
    // A second run (a re-run after a partial failure) publishes nothing twice.
    expect(run('node', script, { cwd: repo }).stdout).toContain('0 published, 11 already on the registry (11 public packages)\n');

    for (const name of NAMES) {
      const response = await http('GET', `${registryUrl}${name.replace('/', '%2f')}`);
      expect(response.status, name).toBe(200);
      const doc = parse(response) as { 'dist-tags': Record<string, string>; versions: Record<string, { dist: { tarball: string } }> };
      expect(doc['dist-tags'], name).toEqual({ latest: VERSION });
      expect(Object.keys(doc.versions), name).toEqual([VERSION]);
    }
  });

  it('every tarball carries its CHANGELOG, LICENSE, metadata and schema, no source maps, and real dependency ranges', async () => {
    for (const [name, dir] of PUBLISHED) {
      const manifest = parse(await http('GET', `${registryUrl}${name.replace('/', '%2f')}/${VERSION}`)) as {
        dist: { tarball: string };
        os?: string[];
        cpu?: string[];
        libc?: string[];
      };
      const tgz = path.join(work, `${name.replace('/', '-')}.tgz`);
      fs.writeFileSync(tgz, (await http('GET', manifest.dist.tarball)).body);
      const unpacked = path.join(work, 'unpacked', name);
      fs.mkdirSync(unpacked, { recursive: true });
      run('tar', ['-xzf', tgz, '-C', unpacked], { cwd: work });
      const files = walk(path.join(unpacked, 'package'));
      expect(files, name).toContain('CHANGELOG.md');
      expect(files, name).toContain('README.md');
      expect(fs.readFileSync(path.join(unpacked, 'package', 'LICENSE'), 'utf8'), `${name}/LICENSE`).toBe(ROOT_LICENSE);
      if (name === PLATFORM_PACKAGE) {
        // The addon and nothing to build it from: no binding.gyp (npm would add `node-gyp rebuild` as its install script).
        expect([...files].sort()).toEqual(['CHANGELOG.md', 'LICENSE', 'README.md', 'fs-policy.node', 'package.json']);
        const addon = fs.readFileSync(path.join(unpacked, 'package', 'fs-policy.node'));
        expect(addon.equals(fs.readFileSync(path.join(repo, dir, 'fs-policy.node'))), 'the tarball holds the addon `pnpm build` made').toBe(true);
        // ELF, 64-bit, little-endian, shared object (ET_DYN), x86-64 (EM_X86_64 = 62).
        expect([addon.subarray(0, 4).toString('latin1'), addon[4], addon[5], addon.readUInt16LE(16), addon.readUInt16LE(18)]).toEqual(['\x7fELF', 2, 1, 3, 62]);
        // What npm and pnpm read to pick (or skip) it, in the registry's document of the version.
        expect([manifest.os, manifest.cpu, manifest.libc]).toEqual([['linux'], ['x64'], ['glibc']]);
      } else {
        expect(files, name).toContain('dist/index.js');
        expect(files, name).toContain('dist/index.d.ts');
      }
      expect(files.filter((f) => f.endsWith('.map') || f.startsWith('src/') || f.startsWith('test/')), name).toEqual([]);
      for (const f of files.filter((file) => /\.(js|d\.ts)$/.test(file))) {
        expect(fs.readFileSync(path.join(unpacked, 'package', f), 'utf8'), `${name}/${f}`).not.toContain('sourceMappingURL');
      }
      expect(fs.readFileSync(path.join(unpacked, 'package', 'CHANGELOG.md'), 'utf8'), name).toBe(INITIAL_CHANGELOG(name));

      const pkg = readJson(path.join(unpacked, 'package', 'package.json')) as {
        version: string;
        repository: unknown;
        homepage: string;
        bugs: unknown;
        dependencies?: Record<string, string>;
        optionalDependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
        exports: Record<string, unknown>;
        main?: string;
        os?: string[];
        cpu?: string[];
        libc?: string[];
        scripts?: Record<string, string>;
        gypfile?: boolean;
      };
      expect(pkg.version).toBe(VERSION);
      expect(pkg.repository, name).toEqual({ type: 'git', url: REPOSITORY, directory: dir });
      expect(pkg.homepage, name).toBe(`https://github.com/hermes-agent/hermes-persistence/tree/main/${dir}#readme`);
      expect(pkg.bugs, name).toEqual({ url: 'https://github.com/hermes-agent/hermes-persistence/issues' });
      const internal = Object.entries(pkg.dependencies ?? {}).filter(([dep]) => dep.startsWith('@hermes/'));
      expect(internal.map(([dep]) => dep).sort(), name).toEqual([...(INTERNAL_DEPENDENCIES[name] ?? [])]);
      for (const [dep, range] of internal) expect(range, `${name} -> ${dep}`).toBe(`^${VERSION}`);
      for (const [dep, range] of Object.entries(pkg.dependencies ?? {})) expect(range, `${name} -> ${dep}`).not.toMatch(/^workspace:/);
      expect(pkg.optionalDependencies ?? {}, `${name} optionalDependencies`).toEqual(OPTIONAL_DEPENDENCIES[name] ?? {});
      expect(pkg.peerDependencies, `${name} peerDependencies`).toBeUndefined();
      // No package runs anything at install: nothing compiles on a user's machine, pnpm asks no approval for
      // the family (better-sqlite3, a third-party dependency, is the one that does).
      const installScripts = ['preinstall', 'install', 'postinstall', 'prepare'].filter((script) => pkg.scripts?.[script] !== undefined);
      expect(installScripts, `${name} install scripts`).toEqual([]);
      expect(pkg.gypfile, name).toBeUndefined();
      expect(files.filter((f) => f.endsWith('binding.gyp')), name).toEqual([]);
      if (name === PLATFORM_PACKAGE) {
        expect({ main: pkg.main, os: pkg.os, cpu: pkg.cpu, libc: pkg.libc, dependencies: pkg.dependencies, scripts: pkg.scripts }).toEqual({
          main: 'fs-policy.node',
          os: ['linux'],
          cpu: ['x64'],
          libc: ['glibc'],
          dependencies: undefined,
          // The workspace build step only; npm and pnpm never run a script named `build` at install.
          scripts: { build: 'node ../fs-policy/native/build.mjs' },
        });
      }
      if (name === 'hermes-fs') {
        // Every --json document's schema ships, exported by one pattern (hermes-fs/schema/<name>.json).
        expect(files.filter((f) => f.startsWith('schema/')).sort()).toEqual([
          'schema/doctor.schema.json',
          'schema/error.schema.json',
          'schema/matrix.schema.json',
          'schema/pending-export.schema.json',
          'schema/pending-list.schema.json',
          'schema/pending-prune.schema.json',
          'schema/pending-recover.schema.json',
          'schema/pending-show.schema.json',
          'schema/provision.schema.json',
          'schema/save.schema.json',
        ]);
        expect(pkg.exports['./schema/*.json']).toBe('./schema/*.json');
      }
      if (name === '@hermes/session-db') expect(Object.keys(pkg.dependencies ?? {})).toContain('@types/better-sqlite3');
    }
  });

  it('an npm project installs hermes-fs and @hermes/fs-policy from the registry', () => {
    const project = path.join(work, 'npm-app');
    projects.npm = project;
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'npm-app', version: '1.0.0', private: true, type: 'module' }, null, 2));
    fs.writeFileSync(path.join(project, '.npmrc'), `registry=${registryUrl}\ncache=${path.join(work, 'npm-cache')}\n`);
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', 'hermes-fs', '@hermes/fs-policy'], { cwd: project });
    // The rest of the family, and the compiler the consumer type-checks with. On Node 20, hermes-gateway's
    // fastify brings light-my-request 6.8 and its cookie 2, which declares node >=22: npm warns EBADENGINE (not
    // shown at --loglevel=error) and installs; the gateway runs on Node 20 (the hermes-gateway test below).
    const rest = MODULES.filter((n) => n !== 'hermes-fs' && n !== '@hermes/fs-policy');
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...rest, 'typescript@5.9.3', '@types/node@^20.19.0'], { cwd: project });
    const lock = readJson(path.join(project, 'package-lock.json')) as { packages: Record<string, { version?: string; optional?: boolean }> };
    for (const name of NAMES) expect(lock.packages[`node_modules/${name}`]?.version, name).toBe(VERSION);
    // The platform package came with fs-policy, as an optional dependency, not asked for by the project.
    expect(lock.packages[`node_modules/${PLATFORM_PACKAGE}`]?.optional).toBe(true);
    expect(Object.keys((readJson(path.join(project, 'package.json')) as { dependencies: Record<string, string> }).dependencies)).not.toContain(PLATFORM_PACKAGE);
  });

  it('a pnpm project installs them from the registry, with better-sqlite3 approved to build (as the README says)', () => {
    const project = path.join(work, 'pnpm-app');
    projects.pnpm = project;
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'pnpm-app', version: '1.0.0', private: true, type: 'module' }, null, 2));
    fs.writeFileSync(path.join(project, '.npmrc'), `registry=${registryUrl}\ncache-dir=${path.join(work, 'pnpm-cache')}\n`);
    const first = run('pnpm', ['add', '--reporter=append-only', '--allow-build=better-sqlite3', 'hermes-fs', '@hermes/fs-policy'], { cwd: project });
    // The platform package has no install script: pnpm has nothing to ask approval for (better-sqlite3 is approved).
    expect(first.stdout + first.stderr).not.toMatch(/Ignored build scripts/);
    // pnpm records the approval in the project, so later installs build better-sqlite3 without the flag.
    expect(fs.readFileSync(path.join(project, 'pnpm-workspace.yaml'), 'utf8')).toMatch(/^allowBuilds:\n {2}better-sqlite3: true$/m);
    const rest = MODULES.filter((n) => n !== 'hermes-fs' && n !== '@hermes/fs-policy');
    const second = run('pnpm', ['add', '--reporter=append-only', ...rest, 'typescript@5.9.3', '@types/node@^20.19.0'], { cwd: project });
    expect(second.stdout + second.stderr).not.toMatch(/Ignored build scripts/);
    for (const name of MODULES) {
      expect(versionOf(path.join(project, 'node_modules', name, 'package.json')), name).toBe(VERSION);
    }
    // pnpm links an optional dependency next to the package that wants it, not at the top of node_modules.
    expect(fs.existsSync(path.join(project, 'node_modules', PLATFORM_PACKAGE))).toBe(false);
    const fsPolicy = fs.realpathSync(path.join(project, 'node_modules', '@hermes', 'fs-policy'));
    expect(versionOf(path.join(fsPolicy, '..', '..', PLATFORM_PACKAGE, 'package.json'))).toBe(VERSION);
  });

  it('a global pnpm install of hermes-fs, approved as the README says, runs the matrix', () => {
    const pnpmHome = path.join(work, 'pnpm-home');
    fs.mkdirSync(pnpmHome);
    // The machine's store, as a user's global install would use (PNPM_HOME alone would move it under pnpmHome).
    const storePath = run('pnpm', ['store', 'path'], { cwd: work }).stdout.trim(); // <store-dir>/v10
    const store = /^v\d+$/.test(path.basename(storePath)) ? path.dirname(storePath) : storePath;
    const env = {
      PNPM_HOME: pnpmHome,
      npm_config_store_dir: store,
      PATH: `${pnpmHome}${path.delimiter}${cleanEnv().PATH ?? ''}`,
      npm_config_registry: registryUrl,
      npm_config_cache_dir: path.join(work, 'pnpm-cache'),
    };
    run('pnpm', ['add', '-g', '--reporter=append-only', '--allow-build=better-sqlite3', 'hermes-fs'], { cwd: work, env });
    const bin = path.join(pnpmHome, 'hermes-fs');
    expect(run(bin, ['--version'], { cwd: work, env }).stdout.trim()).toBe(VERSION);
    const globalPackage = path.join(run('pnpm', ['root', '-g'], { cwd: work, env }).stdout.trim(), 'hermes-fs');
    expectMatrix(run(bin, ['matrix', '--cross-uid', '--json'], { cwd: work, env }).stdout, path.join(globalPackage, 'schema', 'matrix.schema.json'));
  });

  for (const kind of ['npm', 'pnpm'] as const) {
    describe(`the ${kind} project`, () => {
      it('imports every package from ESM and require()s it from CommonJS', () => {
        const project = projects[kind];
        const esm = run(process.execPath, ['--input-type=module', '-e', ESM_IMPORTS], { cwd: project }).stdout;
        fs.writeFileSync(path.join(project, 'probe.cjs'), CJS_REQUIRES);
        const cjs = run(process.execPath, ['probe.cjs'], { cwd: project }).stdout;
        for (const out of [esm, cjs]) {
          for (const name of [...MODULES, '@hermes/fs-policy/testing']) {
            expect(out).toMatch(new RegExp(`^${name.replace('/', '\\/')} [1-9]\\d*$`, 'm'));
          }
          expect(out).toContain('schema hermes-fs matrix --json\n');
        }
        for (const name of MODULES) expect(cjs).toContain(`version ${name} ${VERSION}\n`);
      });

      it('runs @hermes/fs-policy in native mode: its platform package came with it', () => {
        const project = projects[kind];
        const out = run(process.execPath, ['--input-type=module', '-e', ANCHOR_PROBE], { cwd: project, unset: ANCHOR_VARIABLES });
        expect(JSON.parse(out.stdout)).toEqual(NATIVE_ANCHOR);
        expect(out.stderr).toBe('');
      });

      it("runs the fs-policy README's quickstart as published", () => {
        const project = projects[kind];
        const readme = fs.readFileSync(path.join(project, 'node_modules', '@hermes', 'fs-policy', 'README.md'), 'utf8');
        const quickstart = /## Quickstart\n\n```js\n([\s\S]*?)\n```/.exec(readme)?.[1];
        expect(quickstart, 'a ```js block under "## Quickstart"').toBeDefined();
        const home = path.join(work, `quickstart-${kind}`);
        expect(quickstart).toContain("'/tmp/hermes-quickstart'");
        fs.writeFileSync(path.join(project, 'quickstart.mjs'), (quickstart ?? '').replaceAll('/tmp/hermes-quickstart', home));
        const out = run(process.execPath, ['quickstart.mjs'], { cwd: project });
        expect(out.stdout).toBe(`${home}/pending_messages/pending-1.json 600\n`);
        expect(out.stderr).toBe('');
        expect((fs.statSync(path.join(home, 'pending_messages', 'pending-1.json')).mode & 0o7777).toString(8)).toBe('600');
        expect((fs.statSync(path.join(home, 'moa-traces', 's1.jsonl')).mode & 0o7777).toString(8)).toBe('600');
      });

      it('runs `npx hermes-fs matrix --json` and measures the table of docs/permissions.md', () => {
        const project = projects[kind];
        expect(run('npx', ['--no-install', 'hermes-fs', '--version'], { cwd: project }).stdout.trim()).toBe(VERSION);
        const out = run('npx', ['--no-install', 'hermes-fs', 'matrix', '--cross-uid', '--json'], { cwd: project }).stdout;
        expectMatrix(out, path.join(project, 'node_modules', 'hermes-fs', 'schema', 'matrix.schema.json'));
      });

      it('holds one @hermes/fs-policy: errors and the logger cross package boundaries', () => {
        const project = projects[kind];
        expect(fsPolicyCopies(project)).toHaveLength(1);
        fs.writeFileSync(path.join(project, 'instance-probe.mjs'), INSTANCE_PROBE);
        const probe = JSON.parse(run(process.execPath, ['instance-probe.mjs'], { cwd: project }).stdout) as ProbeResult;
        const copies = new Set(Object.values(probe.resolved));
        expect(Object.keys(probe.resolved).sort()).toEqual(
          [
            'app',
            '@hermes/cli',
            '@hermes/config',
            '@hermes/gateway',
            '@hermes/moa-trace',
            '@hermes/session-db',
            '@hermes/trajectory',
            'hermes-fs',
            'hermes-gateway',
          ].sort(),
        );
        expect(copies.size, JSON.stringify(probe.resolved, null, 2)).toBe(1);
        expect(probe.error).toEqual({ name: 'FsPolicyError', code: 'ENOTDIR', instanceOfAppFsPolicyError: true });
        expect(probe.loggerLines).toEqual([expect.stringMatching(/^HERMES_HOME_MODE="not-a-mode" rejected/)]);
      });

      it('type-checks a consumer against every published .d.ts with skipLibCheck: false', () => {
        const project = projects[kind];
        fs.writeFileSync(path.join(project, 'consumer.ts'), CONSUMER_TS);
        const tsc = path.join(project, 'node_modules', 'typescript', 'bin', 'tsc');
        for (const [file, config] of [
          ['tsconfig.json', TSCONFIG_NODENEXT],
          ['tsconfig.bundler.json', TSCONFIG_BUNDLER],
        ] as const) {
          fs.writeFileSync(path.join(project, file), JSON.stringify(config, null, 2));
          const result = run(process.execPath, [tsc, '-p', file, '--pretty', 'false'], { cwd: project, ok: [0, 1, 2] });
          expect(result.stdout + result.stderr, `${kind} ${file}`).toBe('');
          expect(result.status).toBe(0);
        }
      });
    });
  }

  it('the npm project runs hermes-gateway: --help, then a real start that stores a message and stops on SIGTERM with 143', async () => {
    // Runs on the test's Node (20 here), where npm warned EBADENGINE for cookie 2 at install: it must run anyway.
    const project = projects.npm;
    const help = run('npx', ['--no-install', 'hermes-gateway', '--help'], { cwd: project });
    expect(help.stdout.startsWith('usage: hermes-gateway [options]\n'), help.stdout).toBe(true);
    expect(help.stdout).toContain('--temp-home');

    // --temp-home makes its home under TMPDIR: inside this run's directory, removed with it.
    const tmp = path.join(work, 'gateway-tmp');
    fs.mkdirSync(tmp);
    const child = spawn(path.join(project, 'node_modules', '.bin', 'hermes-gateway'), ['--temp-home', '--port', '0', '--print-url'], {
      cwd: project,
      env: cleanEnv({ TMPDIR: tmp }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      const deadline = Date.now() + 60_000;
      while (!stdout.includes('\n')) {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`hermes-gateway exited ${String(child.exitCode ?? child.signalCode)} before printing its URL:\n${stderr}`);
        }
        if (Date.now() > deadline) throw new Error(`hermes-gateway printed no URL within 60 s:\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const url = stdout.split('\n')[0] ?? '';
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);

      const posted = await http('POST', `${url}/v1/sessions/k/messages`, { text: 'hi' }, { 'idempotency-key': 'release-1' });
      expect(posted.status, posted.body.toString()).toBe(201);
      expect(parse(posted)).toMatchObject({ ok: true, session: 'k', status: 'committed', replayed: false, idempotencyKey: 'release-1' });
      const ready = await http('GET', `${url}/readyz`);
      expect(ready.status).toBe(200);
      expect(parse(ready)).toEqual({ ready: true });
      // The page is served from the package's public/ directory, which the tarball must carry.
      const page = await http('GET', `${url}/`);
      expect(page.status).toBe(200);
      expect(page.body.equals(fs.readFileSync(path.join(project, 'node_modules', 'hermes-gateway', 'public', 'index.html')))).toBe(true);
      expect(page.body.toString().startsWith('<!DOCTYPE html>\n')).toBe(true);

      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const [code, signal] = await exited;
      clearTimeout(timer);
      expect({ code, signal }, stderr).toEqual({ code: 143, signal: null });
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    }
  });

  it('the probe sees a second fs-policy copy when there is one (npm tree with a nested copy)', () => {
    // The failure the fixed group prevents, made on purpose: session-db gets its own copy of fs-policy.
    const project = projects.npm;
    const nested = path.join(project, 'node_modules', '@hermes', 'session-db', 'node_modules', '@hermes', 'fs-policy');
    fs.cpSync(path.join(project, 'node_modules', '@hermes', 'fs-policy'), nested, { recursive: true });
    try {
      expect(fsPolicyCopies(project)).toHaveLength(2);
      const probe = JSON.parse(run(process.execPath, ['instance-probe.mjs'], { cwd: project }).stdout) as ProbeResult;
      expect(new Set(Object.values(probe.resolved)).size).toBe(2);
      expect(probe.error?.instanceOfAppFsPolicyError).toBe(false);
      expect(probe.loggerLines).toEqual([]);
    } finally {
      fs.rmSync(path.join(project, 'node_modules', '@hermes', 'session-db', 'node_modules'), { recursive: true, force: true });
    }
  });

  it('a pnpm project that does not approve better-sqlite3 cannot open a session database', () => {
    // Why the README tells pnpm users to approve the build: pnpm 10 skips install scripts by default.
    const project = path.join(work, 'pnpm-unapproved');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'pnpm-unapproved', version: '1.0.0', private: true, type: 'module' }));
    fs.writeFileSync(path.join(project, '.npmrc'), `registry=${registryUrl}\ncache-dir=${path.join(work, 'pnpm-cache')}\n`);
    const install = run('pnpm', ['add', '--reporter=append-only', '@hermes/session-db'], { cwd: project });
    // better-sqlite3 alone: fs-policy's platform package, installed with it, has no script to approve.
    const ignored = /Ignored build scripts: ([^\n│]*)/.exec(install.stdout + install.stderr)?.[1]?.trim();
    expect(ignored).toMatch(/^better-sqlite3@\d+\.\d+\.\d+\.$/);
    const home = path.join(work, 'unapproved-home');
    fs.mkdirSync(home);
    const opened = run(
      process.execPath,
      ['--input-type=module', '-e', "import { openSessionDb } from '@hermes/session-db'; openSessionDb({ home: process.argv[1] });", home],
      { cwd: project, ok: [1] },
    );
    expect(opened.stderr).toContain('Could not locate the bindings file');
  });

  it('a fresh npm project with no C compiler on PATH installs @hermes/fs-policy prebuilt: native, and procfd with the same results without its platform package', () => {
    const project = path.join(work, 'npm-no-compiler');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'npm-no-compiler', version: '1.0.0', private: true, type: 'module' }, null, 2));
    fs.writeFileSync(path.join(project, '.npmrc'), `registry=${registryUrl}\ncache=${path.join(work, 'npm-cache')}\n`);

    // PATH is one directory holding node, npm, npx and sh, nothing else: no compiler, make or Python for
    // node-gyp to find. npm's `#!/usr/bin/env node` finds node there.
    const bin = path.join(work, 'no-compiler-bin');
    fs.mkdirSync(bin);
    const locate = (tool: string): string => fs.realpathSync(run('sh', ['-c', `command -v ${tool}`], { cwd: work }).stdout.trim());
    for (const [tool, target] of [
      ['node', process.execPath],
      ['npm', locate('npm')],
      ['npx', locate('npx')],
      ['sh', locate('sh')],
    ] as const) {
      fs.symlinkSync(target, path.join(bin, tool));
    }
    const unset = ['CC', 'CXX', 'PYTHON', ...ANCHOR_VARIABLES];
    const bare = (extra: Record<string, string> = {}): Pick<RunOptions, 'env' | 'unset'> => ({
      env: { PATH: bin, ...extra },
      unset: unset.filter((key) => !(key in extra)),
    });
    const lookup = run(
      path.join(bin, 'sh'),
      ['-c', 'for t in cc c++ gcc g++ clang make python3 python node-gyp; do command -v "$t" && exit 1; done; for t in node npm npx sh; do command -v "$t"; done'],
      { cwd: project, ...bare(), timeoutMs: 10_000 },
    );
    expect(lookup.stdout).toBe(['node', 'npm', 'npx', 'sh'].map((tool) => `${path.join(bin, tool)}\n`).join(''));

    run(path.join(bin, 'npm'), ['install', '--no-audit', '--no-fund', '--loglevel=error', '@hermes/fs-policy'], { cwd: project, ...bare(), timeoutMs: 180_000 });
    const lock = readJson(path.join(project, 'package-lock.json')) as { packages: Record<string, { version?: string; optional?: boolean }> };
    expect(Object.keys(lock.packages).sort()).toEqual(['', 'node_modules/@hermes/fs-policy', `node_modules/${PLATFORM_PACKAGE}`]);
    expect(lock.packages[`node_modules/${PLATFORM_PACKAGE}`]).toMatchObject({ version: VERSION, optional: true });
    // The one native file in the tree is the prebuilt addon, as published: nothing was compiled.
    const installed = walk(path.join(project, 'node_modules'));
    expect(installed.filter((f) => f.endsWith('.node') || f.startsWith('@hermes/fs-policy/build/'))).toEqual([`${PLATFORM_PACKAGE}/fs-policy.node`]);
    expect(fs.readFileSync(path.join(project, 'node_modules', PLATFORM_PACKAGE, 'fs-policy.node')).equals(fs.readFileSync(path.join(repo, 'packages', 'fs-policy-linux-x64-gnu', 'fs-policy.node')))).toBe(true);

    fs.writeFileSync(path.join(project, 'smoke.mjs'), SMOKE);
    const smoke = (label: string, extra: Record<string, string> = {}): SmokeReport => {
      const out = run(path.join(bin, 'node'), ['smoke.mjs', path.join(work, `smoke-${label}`)], { cwd: project, ...bare(extra), timeoutMs: 60_000 });
      expect(out.stderr, label).toBe('');
      return JSON.parse(out.stdout) as SmokeReport;
    };
    const split = ({ anchor, logs, ...results }: SmokeReport): { anchor: SmokeReport['anchor']; logs: string[]; results: typeof results } => ({ anchor, logs, results });

    const native = split(smoke('native'));
    expect(native.anchor).toEqual(NATIVE_ANCHOR);
    expect(native.logs).toEqual([]);
    expect(native.results).toEqual(SMOKE_RESULTS);

    const forced = split(smoke('forced-procfd', { HERMES_FS_ANCHOR: 'procfd' }));
    expect(forced.anchor).toEqual({ mode: 'procfd', reason: 'HERMES_FS_ANCHOR=procfd', openat2: false });
    expect(forced.logs).toEqual([]);
    expect(forced.results).toEqual(SMOKE_RESULTS);

    // What a user who skips optional dependencies has: fs-policy alone. One info line, then procfd.
    fs.rmSync(path.join(project, 'node_modules', PLATFORM_PACKAGE), { recursive: true });
    const without = split(smoke('without-addon'));
    expect(without.anchor).toEqual({
      mode: 'procfd',
      reason: `${PLATFORM_PACKAGE} could not be loaded [MODULE_NOT_FOUND]: Cannot find module '${PLATFORM_PACKAGE}'`,
      openat2: false,
    });
    expect(without.logs).toEqual(['info: native descriptor layer unavailable; resolving names through /proc/self/fd']);
    expect(without.results).toEqual(SMOKE_RESULTS);
    console.log(`anchor modes without a compiler: installed ${native.anchor.mode}; HERMES_FS_ANCHOR=procfd ${forced.anchor.mode}; platform package removed ${without.anchor.mode}`);
  }, 600_000);

  it('the registry stops with the test', async () => {
    await stopRegistry();
    await expect(http('GET', `${registryUrl}-/ping`)).rejects.toThrow(/ECONNREFUSED/);
  });
});
