/**
 * Whether the home is managed, from the evidence in its order of strength: the operator's flag, HERMES_MANAGED,
 * a trusted `.managed` marker, the installed tmpfiles configuration, and the tree itself.
 */
import type * as fs from 'node:fs';
import { detectManaged, formatMode, FsPolicyError, inspectManagedMarker, type ManagedMarker, readRegularFileSync, scanTreeSync } from '@hermes/fs-policy';
import { CliError, EXIT } from '../lib/output.js';
import { shellQuote } from '../lib/shell.js';
import { tmpfilesEvidence } from '../provision/tmpfiles.js';
import { classifier, type DoctorOptions, type ManagedSource } from './context.js';
import type { Finding } from './types.js';

/**
 * The `.managed` marker as fs-policy sees it (opened through the home's descriptor, never followed, never
 * read unless trusted), and the finding it deserves: `untrusted-marker` when a member of the group could
 * have written it (it is then ignored, whatever decided), `unreadable` when this uid cannot look it up.
 * Reported even when a flag or HERMES_MANAGED decides: a planted marker misleads every process without them.
 */
export function markerFinding(home: string): { marker: ManagedMarker; finding: Finding | undefined } {
  const marker = inspectManagedMarker(home);
  if (marker.state === 'untrusted') {
    return {
      marker,
      finding: {
        type: 'untrusted-marker',
        severity: 'error',
        path: marker.path,
        kind: 'home',
        problem: `${marker.reason ?? 'the marker is not trusted'}; --fix changes no group-shared file or directory on its word`,
        fix: marker.fix ?? `rm ${shellQuote(marker.path)}`,
        fixable: false,
        ...(marker.mode === null ? {} : { mode: formatMode(marker.mode) }),
      },
    };
  }
  if (marker.state === 'unknown') {
    return {
      marker,
      finding: {
        type: 'unreadable',
        severity: 'warning',
        path: marker.path,
        kind: 'home',
        problem: marker.reason ?? `the marker could not be looked up (${marker.code ?? 'EUNKNOWN'})`,
        fix: marker.fix ?? "run hermes-fs doctor as the home's owner or as root",
        fixable: false,
      },
    };
  }
  return { marker, finding: undefined };
}

/**
 * The tree's own evidence of a managed install, read before anything is judged: a setgid or group-writable
 * home or artifact directory, a group-shared state file.
 */
export function treeEvidence(home: string): { evidence: string[]; homeStat: fs.Stats; realHome: string } {
  const { dirKind, fileKind } = classifier();
  const evidence: string[] = [];
  const note = (rel: string, st: fs.Stats): void => {
    evidence.push(`${rel === '' ? 'the home' : rel} ${formatMode(st.mode)}`);
  };
  let homeStat: fs.Stats | undefined;
  const r = scanTreeSync(home, {
    directory(e) {
      if (e.rel === '') homeStat = e.stat;
      const shared = (e.stat.mode & 0o2000) !== 0 || (e.stat.mode & 0o020) !== 0;
      if ((e.rel === '' || dirKind(e.rel) !== undefined) && shared) note(e.rel, e.stat);
      return e.rel === '' || e.rel === 'sessions';
    },
    file(e) {
      if (fileKind(e.rel, e.name)?.name === 'state-db' && (e.stat.mode & 0o060) === 0o060) note(e.rel, e.stat);
    },
    symlink() {
      // links are judged by the audit
    },
  });
  if (homeStat === undefined) throw new CliError(`cannot audit ${home}: it could not be read`, { code: 'EUNREADABLE', path: home, hint: 'run as the home\'s owner or as root', exitCode: EXIT.error });
  return { evidence, homeStat, realHome: r.realPath };
}

/** The installed tmpfiles configuration's word on the home (exit 2 when it cannot be read or says nothing about it). */
export function readTmpfiles(file: string, home: string): { managed: boolean; system: string | null; rule: string } {
  let text: string;
  try {
    // On NixOS /etc/tmpfiles.d/*.conf are links into the store: followed, but never a FIFO or a huge file.
    text = readRegularFileSync(file, { follow: true, maxBytes: 1 << 20 }).data.toString('utf8');
  } catch (err) {
    const why = err instanceof FsPolicyError ? err.toLine() : err instanceof Error ? err.message : String(err);
    throw new CliError(`cannot read --tmpfiles ${file}: ${why}`, { code: err instanceof FsPolicyError ? err.code : ((err as NodeJS.ErrnoException).code ?? 'EUNKNOWN'), path: file, hint: 'pass the installed configuration, e.g. /etc/tmpfiles.d/hermes.conf', exitCode: EXIT.error, cause: err });
  }
  const evidence = tmpfilesEvidence(text, home);
  if ('problem' in evidence) {
    throw new CliError(`--tmpfiles ${file} is no evidence for ${home}: ${evidence.problem}`, {
      code: 'EUSAGE',
      path: file,
      hint: 'pass the configuration that provisions this home, or --managed/--unmanaged',
      exitCode: EXIT.error,
    });
  }
  return evidence;
}

export interface ManagedDecision {
  readonly vars: NodeJS.ProcessEnv;
  readonly source: ManagedSource | undefined;
  /** The tmpfiles configuration contradicts HERMES_MANAGED or the marker, which win: said as a finding. */
  readonly conflict: string | undefined;
}

/** Evidence order: --managed/--unmanaged > HERMES_MANAGED > the .managed marker > --tmpfiles > the tree. */
export function decideManaged(options: DoctorOptions, home: string, base: NodeJS.ProcessEnv): ManagedDecision {
  const t = options.tmpfiles === undefined ? undefined : readTmpfiles(options.tmpfiles, home);
  const contradicts = (managed: boolean, who: string): string | undefined =>
    t === undefined || t.managed === managed
      ? undefined
      : `--tmpfiles ${options.tmpfiles ?? ''} provisions this home ${t.managed ? 'managed' : 'unmanaged'} (${t.rule}), but ` +
        `${who} says ${managed ? 'managed' : 'unmanaged'}, which wins`;
  if (options.managed !== undefined) {
    const vars = { ...base, HERMES_MANAGED: options.managed ? 'nixos' : 'false' };
    return { vars, source: 'flag', conflict: contradicts(options.managed, options.managed ? '--managed' : '--unmanaged') };
  }
  if (t === undefined) return { vars: base, source: undefined, conflict: undefined };
  const said = detectManaged(home, base);
  if (said.source === 'none' || said.source === 'unknown') return { vars: { ...base, HERMES_MANAGED: t.managed ? (t.system ?? 'nixos') : 'false' }, source: 'tmpfiles', conflict: undefined };
  return { vars: base, source: undefined, conflict: contradicts(said.managed, said.source === 'env' ? 'HERMES_MANAGED' : 'the .managed marker') };
}
