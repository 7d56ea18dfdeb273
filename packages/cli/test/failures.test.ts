import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsPolicyError, loadEnvironment } from '@hermes/fs-policy';
import { createTestUsers, describeNeeds, lastJson, runNode, tempRoot, type TestUsers } from '@hermes/test-utils';
import { formatSaveFailure, SaveError, saveConversation, saveConversationSync, type SaveInput } from '../src/index.js';
import { CONVERSATION, fixture, freshHome, ls, UNMANAGED } from './helpers.js';

const PREVIOUS = '{"previous": "snapshot"}\n';

/** A home whose sessions/saved/ already holds prev.json. */
function homeWithPrevious(): { home: string; saved: string; prev: string } {
  const home = freshHome();
  const saved = path.join(home, 'sessions', 'saved');
  fs.mkdirSync(saved, { recursive: true });
  const prev = path.join(saved, 'prev.json');
  fs.writeFileSync(prev, PREVIOUS);
  return { home, saved, prev };
}

function withBigInt(): SaveInput {
  return { ...CONVERSATION, messages: [...CONVERSATION.messages, { role: 'user', content: [{ type: 'count', value: 10n }] }] };
}

function withCycle(): SaveInput {
  const part: Record<string, unknown> = { type: 'text', text: 'loop' };
  part.self = part;
  return { ...CONVERSATION, messages: [...CONVERSATION.messages, { role: 'user', content: [part] }] };
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the save to fail');
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected the save to fail');
}

describe('values that cannot be serialised', () => {
  for (const [name, make] of [
    ['BigInt', withBigInt],
    ['circular', withCycle],
  ] as const) {
    for (const format of ['json', 'md', 'html'] as const) {
      it(`${name} (${format}): ESERIALIZE, the previous file byte-identical, no temp file`, async () => {
        const { home, saved, prev } = homeWithPrevious();
        const err = await rejection(saveConversation(make(), { home, format, filename: 'prev.json', env: UNMANAGED }));
        expect(err).toBeInstanceOf(SaveError);
        const e = err as SaveError;
        expect(e.code).toBe('ESERIALIZE');
        expect(e.cause).toBeInstanceOf(TypeError);
        expect(formatSaveFailure(e)).toBe(`(x_x) Failed to save: ${e.reason}`);
        expect(e.reason.startsWith('the conversation cannot be serialised: ')).toBe(true);
        expect(fs.readFileSync(prev, 'utf8')).toBe(PREVIOUS);
        expect(ls(saved)).toEqual(['prev.json']);

        const sync = thrown(() => saveConversationSync(make(), { home, format, env: UNMANAGED }));
        expect((sync as SaveError).code).toBe('ESERIALIZE');
        expect(ls(saved)).toEqual(['prev.json']);
      });
    }
  }

  it('serialisation fails before any I/O: not even sessions/saved/ is created', async () => {
    const home = freshHome();
    const err = await rejection(saveConversation(withBigInt(), { home, env: UNMANAGED }));
    expect((err as SaveError).code).toBe('ESERIALIZE');
    expect(fs.existsSync(home)).toBe(false);
  });
});

describe('empty conversations and bad options', () => {
  it('no messages, or only the system prompt: EEMPTY, nothing written', async () => {
    const home = freshHome();
    const none = await rejection(saveConversation({ ...CONVERSATION, messages: [] }, { home, env: UNMANAGED }));
    expect(none).toBeInstanceOf(SaveError);
    expect(formatSaveFailure(none)).toBe('(x_x) Failed to save: no conversation to save (there are no messages yet)');
    const systemOnly = thrown(() =>
      saveConversationSync({ model: 'm', messages: [{ role: 'system', content: 'You are Hermes.' }] }, { home, env: UNMANAGED }),
    );
    expect([(none as SaveError).code, (systemOnly as SaveError).code]).toEqual(['EEMPTY', 'EEMPTY']);
    expect(formatSaveFailure(systemOnly)).toBe('(x_x) Failed to save: no conversation to save (only the system prompt so far)');
    expect(fs.existsSync(home)).toBe(false);
  });

  it('an unknown format and malformed input are typed errors', async () => {
    const home = freshHome();
    const pdf = await rejection(saveConversation(CONVERSATION, { home, format: 'pdf' as 'json', env: UNMANAGED }));
    expect(formatSaveFailure(pdf)).toBe('(x_x) Failed to save: unknown format "pdf"; expected one of: json, md, html');
    const noRole = await rejection(saveConversation({ model: 'm', messages: [{ content: 'x' }] } as unknown as SaveInput, { home, env: UNMANAGED }));
    expect(formatSaveFailure(noRole)).toBe('(x_x) Failed to save: message 0 has no string "role"');
    expect([(pdf as SaveError).code, (noRole as SaveError).code]).toEqual(['EINVALID_FORMAT', 'EINVALID_INPUT']);
  });

  it('a resolved fs-policy environment must belong to the home', async () => {
    const home = freshHome();
    const env = loadEnvironment({ home: freshHome(), env: UNMANAGED });
    const e = await rejection(saveConversation(CONVERSATION, { home, env }));
    expect([(e as SaveError).code, formatSaveFailure(e)]).toEqual([
      'EINVALID_OPTIONS',
      `(x_x) Failed to save: options.env was resolved for ${env.home}, not for the home ${home}`,
    ]);
    const ok = await saveConversation(CONVERSATION, { home, env: loadEnvironment({ home, env: UNMANAGED }) });
    expect(path.dirname(ok.path)).toBe(path.join(home, 'sessions', 'saved'));
  });

  it('formatSaveFailure accepts any thrown value', () => {
    expect(formatSaveFailure(new Error('boom'))).toBe('(x_x) Failed to save: boom');
    expect(formatSaveFailure('plain')).toBe('(x_x) Failed to save: plain');
  });
});

interface ChildError {
  error: { saveError: boolean; code: string; reason: string; causeName: string; causeCode: string; line: string };
}

describeNeeds(['root', 'useradd'], 'an unwritable sessions/saved/ (0500), as a real non-root uid', () => {
  let users: TestUsers | undefined;
  beforeAll(() => {
    users = createTestUsers(1);
  });
  afterAll(() => {
    users?.cleanup();
  });

  function setup(): { home: string; saved: string; prev: string; uid: number; gid: number } {
    if (users === undefined) throw new Error('no test user');
    const user = users.users[0];
    if (user === undefined) throw new Error('no test user');
    const home = path.join(tempRoot('hermes-cli-uid-'), 'home');
    const saved = path.join(home, 'sessions', 'saved');
    fs.mkdirSync(saved, { recursive: true });
    const prev = path.join(saved, 'prev.json');
    fs.writeFileSync(prev, PREVIOUS);
    for (const p of [home, path.join(home, 'sessions'), saved, prev]) fs.chownSync(p, user.uid, users.gid);
    fs.chmodSync(home, 0o700);
    fs.chmodSync(path.join(home, 'sessions'), 0o700);
    fs.chmodSync(prev, 0o600);
    fs.chmodSync(saved, 0o500);
    return { home, saved, prev, uid: user.uid, gid: users.gid };
  }

  for (const how of ['async', 'sync'] as const) {
    for (const name of ['prev.json', undefined] as const) {
      it(`${how}, ${name === undefined ? 'default name' : 'overwriting prev.json'}: EACCES as a SaveError, prev.json intact, no temp file`, () => {
        const { home, saved, prev, uid, gid } = setup();
        const args = name === undefined ? [how] : [how, name];
        const r = runNode(fixture('save.mjs'), args, { uid, gid, umask: 0o022, env: { HERMES_HOME: home, HERMES_MANAGED: 'false' } });
        expect(r.status, r.stderr).toBe(3);
        const { error } = lastJson<ChildError>(r);
        expect([error.saveError, error.code, error.causeName, error.causeCode]).toEqual([true, 'EACCES', 'FsPolicyError', 'EACCES']);
        expect(error.line).toBe(`(x_x) Failed to save: ${error.reason}`);
        // fs-policy's line names the snapshot (and the temp file it could not create), as whom, and the fix.
        const target = name === undefined ? undefined : path.join(saved, name);
        if (target !== undefined) expect(error.reason.startsWith(`create the temp file ${saved}/.prev.json.`)).toBe(true);
        if (target !== undefined) expect(error.reason).toMatch(/\.tmp failed: EACCES: permission denied \[/);
        if (target !== undefined) expect(error.reason).toContain(`[EACCES at open: ${target}]`);
        expect(error.reason).toContain(`EACCES: permission denied`);
        expect(error.reason).toContain(`(uid ${uid}, gid ${gid}). Fix: uid ${uid} (gid ${gid}) may not write to ${saved}/`);
        expect(fs.readFileSync(prev, 'utf8')).toBe(PREVIOUS);
        expect(ls(saved)).toEqual(['prev.json']);
      });
    }
  }
});

describe('the cause of a filesystem failure is the FsPolicyError, code preserved', () => {
  it('a file in the way of sessions/saved/: ENOTDIR', async () => {
    const home = freshHome();
    fs.mkdirSync(path.join(home, 'sessions'), { recursive: true });
    fs.writeFileSync(path.join(home, 'sessions', 'saved'), 'not a directory');
    const err = await rejection(saveConversation(CONVERSATION, { home, env: UNMANAGED }));
    expect(err).toBeInstanceOf(SaveError);
    const e = err as SaveError;
    expect(e.cause).toBeInstanceOf(FsPolicyError);
    expect([e.code, (e.cause as FsPolicyError).code]).toEqual(['ENOTDIR', 'ENOTDIR']);
    expect(e.hint).toBe((e.cause as FsPolicyError).hint);
    const saved = path.join(home, 'sessions', 'saved');
    const uid = process.geteuid?.() ?? -1;
    const gid = process.getegid?.() ?? -1;
    expect(formatSaveFailure(e)).toBe(
      `(x_x) Failed to save: ${saved} exists and is not a directory [ENOTDIR at mkdir: ${saved}] (uid ${uid}, gid ${gid}). ` +
        `Fix: a component of ${saved} is not a directory; move the file that is in the way.`,
    );
  });
});
