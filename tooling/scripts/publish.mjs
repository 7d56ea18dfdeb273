#!/usr/bin/env node
// Publishes every public workspace package whose version is not on the registry yet: `pnpm pack` (which turns
// `workspace:^` into real ranges), then `npm publish <tarball> --provenance --access public`. npm, not pnpm,
// publishes, because npm trusted publishing (an OIDC token of the CI job instead of a long-lived NPM_TOKEN) is
// implemented by the npm CLI (≥ 11.5.1); `changeset publish` goes through `pnpm publish`, which does not use it.
//
// Usage: node tooling/scripts/publish.mjs [--no-provenance] [--registry URL] [--dry-run] [--no-git-tag]
//   --no-provenance  publish without a provenance statement: only for a registry outside CI (the release
//                    test's local one), since a statement needs the OIDC token of a CI job
//   --registry URL   the registry to check and publish to (default: npm's configuration)
//   --dry-run        print the plan (order, skip or publish), change nothing
//   --no-git-tag     do not create the `name@version` git tags
//
// Order: dependencies before dependents (a package's @hermes dependencies are published first), so a consumer
// never sees a version that depends on one the registry does not have. A version already on the registry is
// skipped (re-running after a partial failure publishes the rest). For each package published it creates the
// git tag `name@version` and prints `New tag: name@version`, the line changesets/action reads to push tags and
// write GitHub releases. Exit 0 when everything is published or skipped, 1 on the first failure (named, with the
// command's output), 2 on bad usage.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const WORKSPACE_DIRS = ['packages', 'apps'];
const MIN_NPM_FOR_TRUSTED_PUBLISHING = [11, 5, 1];

class PublishError extends Error {
  constructor(message, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

function parseArgs(argv) {
  const opts = { provenance: true, registry: undefined, dryRun: false, gitTag: true };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--no-provenance') opts.provenance = false;
    else if (arg === '--provenance') opts.provenance = true;
    else if (arg === '--dry-run') opts.dryRun = true;
    else if (arg === '--no-git-tag') opts.gitTag = false;
    else if (arg === '--registry' && argv[i + 1] !== undefined && argv[i + 1] !== '') opts.registry = argv[++i];
    else throw new PublishError(`publish: unknown or incomplete argument ${JSON.stringify(arg)} (see the usage at the top of tooling/scripts/publish.mjs)`, 2);
  }
  return opts;
}

function run(command, args, cwd, { ok = [0] } = {}) {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error !== undefined) throw new PublishError(`publish: ${command} could not run: ${r.error.message}`);
  if (!ok.includes(r.status ?? -1)) {
    throw new PublishError(`publish: \`${command} ${args.join(' ')}\` (in ${path.relative(ROOT, cwd) || '.'}) exited ${String(r.status)}\n${r.stdout}${r.stderr}`);
  }
  return r;
}

/**
 * The public workspace packages in publishing order: each after the workspace packages it depends on.
 * Throws on a dependency cycle (naming the packages left).
 */
export function publishOrder(root = ROOT) {
  const packages = [];
  for (const top of WORKSPACE_DIRS) {
    const base = path.join(root, top);
    if (!fs.existsSync(base)) continue;
    for (const dir of fs.readdirSync(base).sort()) {
      const file = path.join(base, dir, 'package.json');
      if (!fs.existsSync(file)) continue;
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (pkg.private === true) continue;
      packages.push({ name: pkg.name, version: pkg.version, dir: path.join(base, dir), manifest: pkg });
    }
  }
  const names = new Set(packages.map((p) => p.name));
  const deps = new Map(
    packages.map((p) => {
      const all = { ...p.manifest.dependencies, ...p.manifest.peerDependencies, ...p.manifest.optionalDependencies };
      return [p.name, Object.keys(all).filter((d) => names.has(d) && d !== p.name)];
    }),
  );
  const ordered = [];
  const done = new Set();
  while (ordered.length < packages.length) {
    const ready = packages.filter((p) => !done.has(p.name) && deps.get(p.name).every((d) => done.has(d)));
    if (ready.length === 0) {
      throw new PublishError(`publish: the dependencies of ${packages.filter((p) => !done.has(p.name)).map((p) => p.name).join(', ')} form a cycle`);
    }
    for (const p of ready) {
      ordered.push(p);
      done.add(p.name);
    }
  }
  return ordered;
}

/**
 * The entries of a manifest's `files` that name a file or directory (no glob, no negation) and are missing from
 * `dir`: a package published without them (a platform package whose addon was not built, a bin without its
 * dist) installs and then fails, so publishing stops instead.
 */
export function missingFiles(dir, manifest) {
  const plain = (manifest.files ?? []).filter((f) => typeof f === 'string' && !f.startsWith('!') && !/[*?[\]{}]/.test(f));
  // CHANGELOG.md exists only after the first `changeset version`; npm adds README and LICENSE by itself.
  return plain.filter((f) => f !== 'CHANGELOG.md' && !fs.existsSync(path.join(dir, f)));
}

/** Whether `name@version` is on the registry (npm view); a registry error other than "not found" throws. */
function isPublished(name, version, registry) {
  const args = ['view', `${name}@${version}`, 'version', '--json', ...(registry === undefined ? [] : ['--registry', registry])];
  const r = run('npm', args, ROOT, { ok: [0, 1] });
  if (r.status === 0) return r.stdout.trim() !== '' && JSON.parse(r.stdout) === version;
  let code;
  try {
    code = JSON.parse(r.stdout).error?.code;
  } catch {
    code = undefined; // not JSON: reported below with the raw output
  }
  if (code === 'E404') return false;
  throw new PublishError(`publish: cannot tell whether ${name}@${version} is on the registry (npm view exited 1)\n${r.stdout}${r.stderr}`);
}

function checkNpmForProvenance() {
  const version = run('npm', ['--version'], ROOT).stdout.trim();
  const parts = version.split('.').map(Number);
  const [a, b, c] = MIN_NPM_FOR_TRUSTED_PUBLISHING;
  const atLeast = parts[0] > a || (parts[0] === a && (parts[1] > b || (parts[1] === b && parts[2] >= c)));
  if (!atLeast) {
    throw new PublishError(`publish: npm ${version} cannot publish with trusted publishing (OIDC); it needs npm ≥ ${MIN_NPM_FOR_TRUSTED_PUBLISHING.join('.')}: npm install -g npm@11`, 2);
  }
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.provenance && !opts.dryRun) checkNpmForProvenance();
  const order = publishOrder();
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-publish-'));
  let published = 0;
  let skipped = 0;
  try {
    for (const pkg of order) {
      const id = `${pkg.name}@${pkg.version}`;
      if (isPublished(pkg.name, pkg.version, opts.registry)) {
        skipped++;
        process.stdout.write(`skip     ${id} (already on the registry)\n`);
        continue;
      }
      if (opts.dryRun) {
        process.stdout.write(`would publish ${id}\n`);
        continue;
      }
      const missing = missingFiles(pkg.dir, pkg.manifest);
      if (missing.length > 0) {
        throw new PublishError(`publish: ${id} lacks ${missing.join(', ')} (listed in its files): build it first (pnpm build); nothing of it was published`);
      }
      // A directory per package: @hermes/gateway and hermes-gateway both pack to hermes-gateway-<version>.tgz.
      const dest = fs.mkdtempSync(path.join(out, 'pkg-'));
      const packed = JSON.parse(run('pnpm', ['pack', '--pack-destination', dest, '--json'], pkg.dir).stdout);
      const publishArgs = ['publish', packed.filename, '--access', 'public', ...(opts.provenance ? ['--provenance'] : []), ...(opts.registry === undefined ? [] : ['--registry', opts.registry])];
      run('npm', publishArgs, ROOT); // the tarball is self-contained; the repository's .npmrc applies, as for pnpm
      published++;
      process.stdout.write(`publish  ${id}${opts.provenance ? ' (with provenance)' : ''}\n`);
      if (opts.gitTag) {
        const exists = run('git', ['tag', '--list', id], ROOT).stdout.trim() !== '';
        if (!exists) run('git', ['tag', id], ROOT);
        process.stdout.write(`New tag: ${id}\n`);
      }
    }
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
  process.stdout.write(`${String(published)} published, ${String(skipped)} already on the registry (${String(order.length)} public packages)\n`);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main();
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = err instanceof PublishError ? err.exitCode : 1;
  }
}
