// Several levels in one contained lookup: in native mode, where the kernel has openat2, a walk over levels that
// exist and hold no link is one openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS); a link, a
// missing level or any failure falls back to the walk one component at a time, which gives the same verdicts as
// in procfd mode. Each test states what both modes must do; where the steps differ, the mode decides the count.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { modeOf, tempRoot } from '@hermes/test-utils';
import { anchorInfo, atomicWriteSync, holdDirectorySync, secureMkdirSync, setLogger, silentLogger } from '../src/index.js';
import { setFaultHook, type Req } from '../src/internal/io.js';
import { caught, requestsOf, tempEnv } from './helpers.js';

setLogger(silentLogger);

/** True when this process makes the contained lookup (native mode on a kernel with openat2). */
const contained = anchorInfo().mode === 'native' && anchorInfo().openat2;

/** `<home>/<top>/a/b` holding `x.json` ("old") and `c/link.json -> ../x.json`; returns `<home>/<top>/a/b`. */
function climbingLink(env: { home: string }, top: string): string {
  const b = path.join(env.home, top, 'a', 'b');
  fs.mkdirSync(path.join(b, 'c'), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(b, 'x.json'), 'old', { mode: 0o600 });
  fs.symlinkSync('../x.json', path.join(b, 'c', 'link.json'));
  return b;
}

/** Opens of one level relative to a held descriptor (the walk one component at a time). */
function levelOpens(reqs: readonly Req[]): string[] {
  return reqs.filter((r) => r.op === 'open' && r.step === 'resolve' && /^\/proc\/self\/fd\/\d+\/[^/]+$/.test(String(r.args[0]))).map((r) => path.basename(r.path));
}

afterEach(() => {
  setFaultHook(undefined);
});

describe(`several levels in one lookup (${contained ? 'native mode with openat2: contained lookups' : `${anchorInfo().mode} mode: one component at a time`})`, () => {
  it('a directory six levels below the home: one openat2 in native mode, six level opens otherwise; the same directory', () => {
    const env = tempEnv();
    const deep = path.join(env.home, 'r1', 'a', 'b', 'c', 'd', 'e');
    fs.mkdirSync(deep, { recursive: true, mode: 0o700 });
    let created = '';
    const reqs = requestsOf(() => {
      const held = holdDirectorySync(deep, { env });
      try {
        fs.closeSync(held.openSync('probe', fs.constants.O_CREAT | fs.constants.O_WRONLY | fs.constants.O_EXCL, 0o600));
        created = held.display('probe');
      } finally {
        held.close();
      }
    });
    const beneath = reqs.filter((r) => r.op === 'openBeneath');
    if (contained) {
      expect(beneath.map((r) => r.args[1])).toEqual(['r1/a/b/c/d/e']);
      expect(levelOpens(reqs)).toEqual([]);
    } else {
      expect(beneath).toEqual([]);
      expect(levelOpens(reqs)).toEqual(['r1', 'a', 'b', 'c', 'd', 'e']);
    }
    expect(created).toBe(path.join(deep, 'probe'));
    expect(fs.existsSync(path.join(deep, 'probe'))).toBe(true);
  });

  it('a link inside the home on the way: the lookup gives way to the walk, which follows it inside the home', () => {
    const env = tempEnv();
    fs.mkdirSync(path.join(env.home, 'r2', 'q', 'c'), { recursive: true, mode: 0o700 });
    fs.mkdirSync(path.join(env.home, 'r2', 'a'), { mode: 0o700 });
    fs.symlinkSync('../q', path.join(env.home, 'r2', 'a', 'b'));
    const reqs = requestsOf(() => {
      const held = holdDirectorySync(path.join(env.home, 'r2', 'a', 'b', 'c'), { env });
      try {
        fs.closeSync(held.openSync('probe', fs.constants.O_CREAT | fs.constants.O_WRONLY | fs.constants.O_EXCL, 0o600));
      } finally {
        held.close();
      }
    });
    // In native mode the lookup met the link (ELOOP) and the walk took over; it ends in the link's target.
    expect(reqs.filter((r) => r.op === 'openBeneath').length).toBe(contained ? 1 : 0);
    expect(levelOpens(reqs)).toEqual(['r2', 'a', 'b', 'q', 'c']);
    expect(fs.readdirSync(path.join(env.home, 'r2', 'q', 'c'))).toEqual(['probe']);
  });

  it('a link out of the home on the way: ESYMLINK_ESCAPE in every mode (never EXDEV or ELOOP), nothing created there', () => {
    const env = tempEnv();
    const outside = path.join(tempRoot(), 'outside');
    fs.mkdirSync(path.join(outside, 'c'), { recursive: true, mode: 0o700 });
    fs.mkdirSync(path.join(env.home, 'r3', 'a'), { recursive: true, mode: 0o700 });
    fs.symlinkSync(outside, path.join(env.home, 'r3', 'a', 'b'));
    const err = caught(() => atomicWriteSync(path.join(env.home, 'r3', 'a', 'b', 'c', 'x.json'), '{}', { kind: 'sessions', env }));
    expect(err.code).toBe('ESYMLINK_ESCAPE');
    expect(fs.readdirSync(path.join(outside, 'c'))).toEqual([]);
  });

  it('missing levels after existing ones are created by the walk, each with the kind mode', () => {
    const env = tempEnv();
    fs.mkdirSync(path.join(env.home, 'r4', 'a'), { recursive: true, mode: 0o700 });
    const r = secureMkdirSync(path.join(env.home, 'r4', 'a', 'b', 'c'), 'sessions', { env });
    expect(r.created).toEqual([path.join(env.home, 'r4', 'a', 'b'), path.join(env.home, 'r4', 'a', 'b', 'c')]);
    expect(modeOf(path.join(env.home, 'r4', 'a', 'b'))).toBe('0700');
    expect(modeOf(path.join(env.home, 'r4', 'a', 'b', 'c'))).toBe('0700');
  });
});

describe('a link at the target whose text climbs (`..`) after a multi-level lookup', () => {
  it('`c/link.json -> ../x.json` replaces b/x.json (the level below c, not the lookup base)', () => {
    const env = tempEnv();
    const b = climbingLink(env, 's');
    const reqs = requestsOf(() => {
      const r = atomicWriteSync(path.join(b, 'c', 'link.json'), 'new', { kind: 'sessions', env });
      expect(r.path).toBe(path.join(b, 'x.json'));
    });
    expect(fs.readFileSync(path.join(b, 'x.json'), 'utf8')).toBe('new');
    expect(fs.readlinkSync(path.join(b, 'c', 'link.json'))).toBe('../x.json');
    // Native mode: the levels the lookup skipped are walked when `..` needs them.
    expect(levelOpens(reqs)).toEqual(['s', 'a', 'b', 'c']);
    expect(reqs.filter((r) => r.op === 'openBeneath').length).toBe(contained ? 1 : 0);
  });

  it('a climb past the home is ESYMLINK_ESCAPE, and nothing is written', () => {
    const env = tempEnv();
    const c = path.join(env.home, 's2', 'a', 'b', 'c');
    fs.mkdirSync(c, { recursive: true, mode: 0o700 });
    const target = path.join(path.dirname(env.home), 'escaped.json');
    fs.writeFileSync(target, 'outside', { mode: 0o600 });
    fs.symlinkSync('../../../../../escaped.json', path.join(c, 'link.json'));
    expect(caught(() => atomicWriteSync(path.join(c, 'link.json'), 'new', { kind: 'sessions', env })).code).toBe('ESYMLINK_ESCAPE');
    expect(fs.readFileSync(target, 'utf8')).toBe('outside');
  });

  it('a skipped level replaced before `..` needs it: ERACE in native mode (the walk reaches another directory); procfd follows its own stack', () => {
    const env = tempEnv();
    const b = climbingLink(env, 's3');
    let swapped = false;
    setFaultHook((req) => {
      if (!swapped && req.op === 'readlink' && req.path === path.join(b, 'c', 'link.json')) {
        // What a process with write access to s3/a does meanwhile: b moved away, another b in its place.
        swapped = true;
        fs.renameSync(b, `${b}.old`);
        fs.mkdirSync(path.join(b, 'c'), { recursive: true, mode: 0o700 });
      }
      return undefined;
    });
    let thrown: string | undefined;
    try {
      atomicWriteSync(path.join(b, 'c', 'link.json'), 'new', { kind: 'sessions', env });
    } catch (err) {
      thrown = (err as { code?: string }).code;
    } finally {
      setFaultHook(undefined);
    }
    expect(swapped).toBe(true);
    if (contained) {
      expect(thrown).toBe('ERACE');
      expect(fs.readFileSync(path.join(`${b}.old`, 'x.json'), 'utf8')).toBe('old');
    } else {
      // The walk's stack holds the b it passed through (now b.old): `..` steps back to it.
      expect(thrown).toBeUndefined();
      expect(fs.readFileSync(path.join(`${b}.old`, 'x.json'), 'utf8')).toBe('new');
    }
    expect(fs.readdirSync(b)).toEqual(['c']);
  });
});
