/**
 * The log lines of a flush's failures: grouped by errno/policy code, so a full disk is one line, not 2,000.
 */
import type { FailedEntry } from './jobs.js';
import { count, type GatewayLogger } from './log.js';

/**
 * Groups failures by errno/policy code: one log line per code with its count, however many payloads failed
 * (a full disk is one line, not 2,000). The per-message detail stays in the report.
 */
export function failureGroups(failed: readonly FailedEntry[]): { code: string; count: number; where: string; first: FailedEntry }[] {
  const groups = new Map<string, { code: string; count: number; paths: Set<string>; first: FailedEntry }>();
  for (const f of failed) {
    const g = groups.get(f.code);
    if (g === undefined) groups.set(f.code, { code: f.code, count: 1, paths: new Set([f.path]), first: f });
    else {
      g.count++;
      g.paths.add(f.path);
    }
  }
  return [...groups.values()].map((g) => ({ code: g.code, count: g.count, where: commonPath([...g.paths]), first: g.first }));
}

/** The one path all of `paths` are, or their common directory. */
function commonPath(paths: readonly string[]): string {
  if (paths.length === 1) return paths[0] ?? '';
  const split = paths.map((p) => p.split('/'));
  const first = split[0] ?? [];
  let n = 0;
  while (n < first.length && split.every((s) => s[n] === first[n])) n++;
  const common = first.slice(0, n).join('/');
  return common === '' ? '/' : common;
}

export function logFailures(logger: GatewayLogger, failed: readonly FailedEntry[]): void {
  for (const g of failureGroups(failed)) {
    const what = g.count === 1 ? g.first.line : `${g.code} at ${g.where}. First: ${g.first.line}`;
    logger.error(`${count(g.count)} pending message(s) NOT written: ${what}`, {
      path: g.where,
      code: g.code,
      step: g.first.step,
      uid: g.first.uid,
      gid: g.first.gid,
      count: g.count,
    });
  }
}

