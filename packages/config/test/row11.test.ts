/**
 * Issue #23 row 11: a member of the service group pointed config.yaml at a root-only file, and root's doctor
 * quoted the file's contents in its findings. Loaded as root now, a link is reported and never read through,
 * and a config.yaml of another uid than root and the home's owner is reported and not read.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setLogger, silentLogger } from '@hermes/fs-policy';
import { describeNeeds, tempRoot } from '@hermes/test-utils';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { ConfigError, loadConfig, loadConfigSync } from '../src/index.js';

const SERVICE = 65534;
const MEMBER = 54321;
const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});
beforeAll(() => {
  setLogger(silentLogger);
});
afterAll(() => {
  setLogger(undefined);
});

/** Secrets as YAML a parser would quote: a valid mapping (lands in `raw`), an invalid value, a syntax error. */
const TARGETS: Record<string, string> = {
  'valid-yaml': 'api_key: SECRET-valid-4f1c\n',
  'invalid-value': 'moa:\n  save_traces: SECRET-value-9a2e\n',
  'syntax-error': 'moa: [SECRET-syntax-77d0\n  x: : :\n',
};

/** A managed-style home (2770, owned by the service uid) and a root-only directory holding the secrets. */
function layout(): { home: string; secrets: string; file: string } {
  const root = tempRoot('hermes-config-row11-');
  roots.push(root);
  const home = path.join(root, 'home');
  fs.mkdirSync(home);
  fs.chownSync(home, SERVICE, SERVICE);
  fs.chmodSync(home, 0o2770);
  const secrets = path.join(root, 'root-only');
  fs.mkdirSync(secrets, { mode: 0o700 });
  for (const [name, text] of Object.entries(TARGETS)) fs.writeFileSync(path.join(secrets, name), text, { mode: 0o600 });
  return { home, secrets, file: path.join(home, 'config.yaml') };
}

/** Everything a caller (the doctor) could show: the result, or the error with its issues and cause. */
async function everythingSaid(home: string): Promise<{ said: string; error: ConfigError | undefined }> {
  const parts: string[] = [];
  let error: ConfigError | undefined;
  for (const load of [() => loadConfigSync(home), () => loadConfig(home)]) {
    try {
      parts.push(JSON.stringify(await load()));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      error = err;
      parts.push(err.message, JSON.stringify(err.issues), String((err.cause as Error | undefined)?.message), JSON.stringify(err.cause));
    }
  }
  return { said: parts.join('\n'), error };
}

describeNeeds(['root'], 'row 11: config.yaml pointed at a root-only file, loaded as root', () => {
  it('row 11: a config.yaml link to each of 3 root-only files: 0 quoted, 3 reported as links', async () => {
    let quoted = 0;
    let reported = 0;
    const messages: [string | undefined, string][] = [];
    for (const [name, text] of Object.entries(TARGETS)) {
      const l = layout();
      fs.symlinkSync(path.join(l.secrets, name), l.file);
      fs.lchownSync(l.file, MEMBER, SERVICE); // the member's link
      const { said, error } = await everythingSaid(l.home);
      const secret = /SECRET-[a-z]+-[0-9a-f]+/.exec(text)?.[0] ?? '';
      if (said.includes(secret) || said.includes('SECRET')) quoted++;
      if (error?.kind === 'read' && (error.cause as { code?: string } | undefined)?.code === 'ESYMLINK') reported++;
      messages.push([error?.message, `${l.file}: cannot read: refusing to read ${l.file}: it is a symbolic link that does not lead into /nix/store [ESYMLINK at verify: ${l.file}]`]);
    }
    console.log(`row 11: ${String(Object.keys(TARGETS).length)} root-only targets behind a config.yaml link: ${String(quoted)} quoted, ${String(reported)} reported as a link`);
    expect(quoted).toBe(0);
    expect(reported).toBe(3);
    for (const [said, expected] of messages) expect(said).toBe(expected);
  });

  it('row 11: a config.yaml owned by another uid than root and the home owner is reported and not read', async () => {
    const l = layout();
    fs.writeFileSync(l.file, 'api_key: SECRET-foreign-0b5e\nmoa:\n  save_traces: SECRET-foreign-value\n', { mode: 0o640 });
    fs.chownSync(l.file, MEMBER, SERVICE);
    const { said, error } = await everythingSaid(l.home);
    console.log(`row 11: config.yaml of uid ${String(MEMBER)} in a home of uid ${String(SERVICE)}: ${error === undefined ? 'read' : `refused ${String((error.cause as { code?: string }).code)}`}`);
    expect(said).not.toContain('SECRET');
    expect(error?.kind).toBe('read');
    expect((error?.cause as { code?: string }).code).toBe('EFOREIGN_OWNER');
    expect(error?.message).toBe(
      `${l.file}: cannot read: refusing to read ${l.file}: it is owned by uid ${String(MEMBER)}, not by 0 or ${String(SERVICE)} [EFOREIGN_OWNER at verify: ${l.file}]`,
    );
  });

  it('row 11: config.yaml of the home owner, and of root, is read', () => {
    for (const owner of [SERVICE, 0]) {
      const l = layout();
      fs.writeFileSync(l.file, 'model: trusted\n', { mode: 0o640 });
      fs.chownSync(l.file, owner, SERVICE);
      expect(loadConfigSync(l.home).raw).toStrictEqual({ model: 'trusted' });
    }
  });
});
