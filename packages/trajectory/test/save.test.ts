import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FsPolicyError, loadEnvironment, type FsPolicyLogger } from '@hermes/fs-policy';
import { lastJson, modeOf, runNode, tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import {
  findGitWorkTree,
  resolveTrajectoryPath,
  saveTrajectory,
  saveTrajectorySync,
  trajectoryOptionsFromConfig,
  type ShareGptTurn,
} from '../src/index.js';

const fixture = fileURLToPath(new URL('./fixtures/save-trajectory.mjs', import.meta.url));
const turns: ShareGptTurn[] = [
  { from: 'human', value: 'hi' },
  { from: 'gpt', value: '<think>\n</think>\nhello' },
];
const at = new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 6));

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], {
    cwd,
    stdio: 'ignore',
  });
}

function gitRepo(root: string, name = 'repo'): string {
  const repo = path.join(root, name);
  fs.mkdirSync(repo);
  git(repo, 'init', '-q');
  return repo;
}

function recordingLogger(): { logger: FsPolicyLogger; warnings: string[] } {
  const warnings: string[] = [];
  const noop = (): void => undefined;
  return { warnings, logger: { debug: noop, info: noop, error: noop, warn: (m) => warnings.push(m) } };
}

describe('saveTrajectory: record and files', () => {
  it('appends {conversations, timestamp, model, completed} in that order as one line', async () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    const cwd = path.join(root, 'work');
    fs.mkdirSync(cwd);
    const r = await saveTrajectory(turns, { home, cwd, model: 'hermes-3', completed: true, now: at });
    expect(r).toMatchObject({
      path: path.join(cwd, 'trajectory_samples.jsonl'),
      redirected: false,
      created: true,
      mode: 0o600,
      gitWorkTree: null,
    });
    expect(fs.readFileSync(r.path, 'utf8')).toBe(
      '{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"<think>\\n</think>\\nhello"}],' +
        '"timestamp":"2025-01-02T03:04:05.006Z","model":"hermes-3","completed":true}\n',
    );
  });

  it('a trajectory that did not complete goes to failed_trajectories.jsonl', () => {
    const root = tempRoot();
    const r = saveTrajectorySync(turns, { home: path.join(root, 'home'), cwd: root, model: 'm', completed: false, now: at });
    expect(r.path).toBe(path.join(root, 'failed_trajectories.jsonl'));
    expect(fs.readFileSync(r.path, 'utf8')).toBe(
      '{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"<think>\\n</think>\\nhello"}],' +
        '"timestamp":"2025-01-02T03:04:05.006Z","model":"m","completed":false}\n',
    );
  });

  it('an existing 0644 trajectory stays 0644 after an append, with the line added', () => {
    const root = tempRoot();
    const file = path.join(root, 'trajectory_samples.jsonl');
    fs.writeFileSync(file, '{"old":true}\n');
    fs.chmodSync(file, 0o644);
    const r = saveTrajectorySync([{ from: 'human', value: 'again' }], {
      home: path.join(root, 'home'),
      cwd: root,
      model: 'm',
      completed: true,
      now: at,
    });
    expect(r).toMatchObject({ path: file, created: false, mode: 0o644 });
    expect(modeOf(file)).toBe('0644');
    expect(fs.readFileSync(file, 'utf8')).toBe(
      '{"old":true}\n' +
        '{"conversations":[{"from":"human","value":"again"}],"timestamp":"2025-01-02T03:04:05.006Z","model":"m","completed":true}\n',
    );
  });

  it('an explicit filename with missing parents creates them owner-only', () => {
    const root = tempRoot();
    const file = path.join(root, 'out', 'runs', 'a.jsonl');
    const r = saveTrajectorySync(turns, { home: path.join(root, 'home'), model: 'm', completed: true, filename: file });
    expect(r.createdDirs).toEqual([path.join(root, 'out'), path.join(root, 'out', 'runs')]);
    expect(modeOf(path.join(root, 'out'))).toBe('0700');
    expect(modeOf(path.join(root, 'out', 'runs'))).toBe('0700');
    expect(modeOf(file)).toBe('0600');
  });

  it('failures throw a FsPolicyError naming the path and a hint (never swallowed)', () => {
    const root = tempRoot();
    fs.writeFileSync(path.join(root, 'plain-file'), '');
    const file = path.join(root, 'plain-file', 'x.jsonl');
    let caught: unknown;
    try {
      saveTrajectorySync(turns, { home: path.join(root, 'home'), model: 'm', completed: true, filename: file });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(FsPolicyError);
    const error = caught as FsPolicyError;
    // fs-policy names the level or the file it failed on (its open-first fast path fails at `open`).
    expect(error.code).toBe('ENOTDIR');
    expect(error.path.startsWith(path.join(root, 'plain-file'))).toBe(true);
    expect(error.toLine()).toContain(`Fix: ${error.hint}`);
    expect(error.hint).not.toBe('');
  });

  it('a trajectories/ dir swapped for a link leading out of the home is refused, also when the file exists', async () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    const outside = path.join(root, 'outside');
    fs.mkdirSync(home);
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'trajectory_samples.jsonl'), '');
    fs.symlinkSync(outside, path.join(home, 'trajectories'));
    const repo = gitRepo(root);
    const { logger } = recordingLogger();
    await expect(saveTrajectory(turns, { home, cwd: repo, model: 'm', completed: true, logger })).rejects.toMatchObject({
      code: 'ESYMLINK_ESCAPE',
      path: path.join(home, 'trajectories'),
    });
    expect(fs.readFileSync(path.join(outside, 'trajectory_samples.jsonl'), 'utf8')).toBe('');
  });

  it('rejects an env loaded for another home', () => {
    const root = tempRoot();
    const env = loadEnvironment({ home: path.join(root, 'other') });
    expect(() =>
      saveTrajectorySync(turns, { home: path.join(root, 'home'), env, model: 'm', completed: true, cwd: root }),
    ).toThrow(`trajectory: options.env was loaded for ${path.join(root, 'other')}, not for the home ${path.join(root, 'home')}`);
  });

  it('trajectoryOptionsFromConfig reads agent.trajectoryAllowGitCwd', () => {
    expect(trajectoryOptionsFromConfig({ agent: { trajectoryAllowGitCwd: true } })).toEqual({ allowGitCwd: true });
  });
});

describe('git work tree redirect', () => {
  it('a git work tree as cwd sends the trajectory to <home>/trajectories/ (child process, real git)', () => {
    const root = tempRoot();
    const repo = gitRepo(root);
    const home = path.join(root, 'home');
    const r = runNode(fixture, [home, '', ''], { cwd: repo, env: { HERMES_HOME: home } });
    const out = lastJson<Record<string, unknown>>(r);
    expect(out).toMatchObject({
      path: path.join(home, 'trajectories', 'trajectory_samples.jsonl'),
      requestedPath: path.join(repo, 'trajectory_samples.jsonl'),
      redirected: true,
      gitWorkTree: repo,
      created: true,
    });
    expect(fs.existsSync(path.join(repo, 'trajectory_samples.jsonl'))).toBe(false);
    expect(modeOf(path.join(home, 'trajectories'))).toBe('0700');
    expect(modeOf(path.join(home, 'trajectories', 'trajectory_samples.jsonl'))).toBe('0600');
    // The one-time notice reaches stderr through the default logger.
    expect(r.stderr).toContain(`trajectory ${path.join(repo, 'trajectory_samples.jsonl')} would land inside the git work tree ${repo}`);
  });

  it('allowGitCwd keeps it in the work tree', () => {
    const root = tempRoot();
    const repo = gitRepo(root);
    const home = path.join(root, 'home');
    const r = saveTrajectorySync(turns, { home, cwd: repo, model: 'm', completed: true, allowGitCwd: true });
    expect(r).toMatchObject({ path: path.join(repo, 'trajectory_samples.jsonl'), redirected: false, gitWorkTree: repo });
    expect(fs.existsSync(path.join(home, 'trajectories'))).toBe(false);
    expect(modeOf(r.path)).toBe('0600');
  });

  it('outside a work tree it stays in cwd', () => {
    const root = tempRoot();
    const plain = path.join(root, 'plain');
    fs.mkdirSync(plain);
    const home = path.join(root, 'home');
    const r = saveTrajectorySync(turns, { home, cwd: plain, model: 'm', completed: true });
    expect(r).toMatchObject({ path: path.join(plain, 'trajectory_samples.jsonl'), redirected: false, gitWorkTree: null });
    expect(fs.existsSync(home)).toBe(false);
  });

  it('a subdirectory, a relative subpath and a `..` name inside a work tree are redirected too', () => {
    const root = tempRoot();
    const repo = gitRepo(root);
    const sub = path.join(repo, 'src', 'deep');
    fs.mkdirSync(sub, { recursive: true });
    const home = path.join(root, 'home');
    const base = { home, cwd: sub, allowGitCwd: false } as const;
    expect(resolveTrajectoryPath({ ...base, completed: false })).toEqual({
      path: path.join(home, 'trajectories', 'failed_trajectories.jsonl'),
      requestedPath: path.join(sub, 'failed_trajectories.jsonl'),
      redirected: true,
      gitWorkTree: repo,
    });
    expect(resolveTrajectoryPath({ ...base, completed: true, filename: 'runs/a.jsonl' }).path).toBe(
      path.join(home, 'trajectories', 'runs', 'a.jsonl'),
    );
    expect(resolveTrajectoryPath({ ...base, completed: true, filename: '../../b.jsonl' }).path).toBe(
      path.join(home, 'trajectories', 'b.jsonl'),
    );
    // An absolute name is the caller's explicit choice: used as given.
    expect(resolveTrajectoryPath({ ...base, completed: true, filename: path.join(repo, 'c.jsonl') })).toEqual({
      path: path.join(repo, 'c.jsonl'),
      requestedPath: path.join(repo, 'c.jsonl'),
      redirected: false,
      gitWorkTree: null,
    });
  });

  it('a linked worktree (.git is a file) counts as a work tree', () => {
    const root = tempRoot();
    const repo = gitRepo(root);
    git(repo, 'commit', '-q', '--allow-empty', '-m', 'init');
    const wt = path.join(root, 'wt');
    git(repo, 'worktree', 'add', '-q', wt);
    expect(fs.statSync(path.join(wt, '.git')).isFile()).toBe(true);
    expect(findGitWorkTree(wt)).toBe(wt);
    expect(findGitWorkTree(root)).toBe(null);
  });

  it('announces a redirect once per process and pair, through the given logger', () => {
    const root = tempRoot();
    const repo = gitRepo(root);
    const home = path.join(root, 'home');
    const { logger, warnings } = recordingLogger();
    const opts = { home, cwd: repo, model: 'm', completed: true, logger } as const;
    const a = saveTrajectorySync(turns, opts);
    const b = saveTrajectorySync(turns, opts);
    expect(a.redirected && b.redirected).toBe(true);
    expect(warnings).toEqual([
      `trajectory ${path.join(repo, 'trajectory_samples.jsonl')} would land inside the git work tree ${repo}; ` +
        `writing it to ${path.join(home, 'trajectories', 'trajectory_samples.jsonl')} instead ` +
        '(set allowGitCwd / agent.trajectory_allow_git_cwd to keep it there)',
    ]);
    expect(fs.readFileSync(a.path, 'utf8').split('\n')).toHaveLength(3);
  });
});
