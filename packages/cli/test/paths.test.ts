import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsPolicyError } from '@hermes/fs-policy';
import { modeOf, tempRoot } from '@hermes/test-utils';
import { formatSaveFailure, SaveError, saveConversation, saveConversationSync, type SaveOptions } from '../src/index.js';
import { CONVERSATION, freshHome, ls, UNMANAGED } from './helpers.js';

async function failure(options: SaveOptions): Promise<SaveError> {
  try {
    await saveConversation(CONVERSATION, options);
  } catch (err) {
    if (err instanceof SaveError) return err;
    throw err;
  }
  throw new Error('expected the save to be refused');
}

/** A directory outside the home, with one file the tests must never touch. */
function outside(): { dir: string; file: string } {
  const dir = tempRoot('hermes-cli-outside-');
  const file = path.join(dir, 'victim.json');
  fs.writeFileSync(file, 'untouched\n');
  return { dir, file };
}

describe('path rules for an explicit file name', () => {
  it('a relative name resolves inside sessions/saved/, not the working directory; sub-directories are created 0700', async () => {
    const home = freshHome();
    const cwd = process.cwd();
    const r = await saveConversation(CONVERSATION, { home, filename: 'sub/name.md', env: UNMANAGED });
    const saved = path.join(home, 'sessions', 'saved');
    expect(r.path).toBe(path.join(saved, 'sub', 'name.md'));
    expect(r.format).toBe('md');
    expect([modeOf(saved), modeOf(path.join(saved, 'sub')), modeOf(r.path)]).toEqual(['0700', '0700', '0600']);
    expect(fs.existsSync(path.join(cwd, 'sub', 'name.md'))).toBe(false);
  });

  it('an absolute name inside sessions/saved/ is accepted', () => {
    const home = freshHome();
    const target = path.join(home, 'sessions', 'saved', 'abs.html');
    const r = saveConversationSync(CONVERSATION, { home, filename: target, env: UNMANAGED });
    expect([r.path, r.format, modeOf(target)]).toEqual([target, 'html', '0600']);
  });

  it('"../escape.json" is refused with EPATH_ESCAPE, before anything is created', async () => {
    const home = freshHome();
    const e = await failure({ home, filename: '../escape.json', env: UNMANAGED });
    const escaped = path.join(home, 'sessions', 'escape.json');
    expect([e.code, e.path]).toEqual(['EPATH_ESCAPE', escaped]);
    expect(formatSaveFailure(e)).toBe(
      `(x_x) Failed to save: "../escape.json" resolves to ${escaped}, outside ${path.join(home, 'sessions', 'saved')}; ` +
        'snapshots are written only inside sessions/saved/',
    );
    expect(fs.existsSync(home)).toBe(false);
  });

  it('"/etc/x.json" and other absolute paths elsewhere are refused', async () => {
    const home = freshHome();
    for (const filename of ['/etc/x.json', path.join(home, 'config.json'), path.join(home, 'sessions', 'saved'), `${home}/sessions/saved/../x.json`]) {
      const e = await failure({ home, filename, env: UNMANAGED });
      expect([filename, e.code]).toEqual([filename, 'EPATH_ESCAPE']);
    }
    expect(fs.existsSync('/etc/x.json')).toBe(false);
    expect(fs.existsSync(home)).toBe(false);
  });

  it('"~/x.json" expands to the user home, which is outside sessions/saved/', async () => {
    const home = freshHome();
    const e = await failure({ home, filename: '~/x.json', env: { ...UNMANAGED, HOME: tempRoot() } });
    expect(e.code).toBe('EPATH_ESCAPE');
  });

  it('a file symlink inside saved/ pointing outside is refused; its target is untouched', async () => {
    const home = freshHome();
    const saved = path.join(home, 'sessions', 'saved');
    fs.mkdirSync(saved, { recursive: true });
    const { file } = outside();
    fs.symlinkSync(file, path.join(saved, 'link.json'));
    const e = await failure({ home, filename: 'link.json', env: UNMANAGED });
    expect(e.code).toBe('ESYMLINK_ESCAPE');
    expect(e.cause).toBeInstanceOf(FsPolicyError);
    expect((e.cause as FsPolicyError).code).toBe('ESYMLINK_ESCAPE');
    expect(fs.readFileSync(file, 'utf8')).toBe('untouched\n');
    expect(ls(saved)).toEqual(['link.json']);
  });

  it('a directory symlink inside saved/ pointing outside is refused; nothing is created through it', async () => {
    const home = freshHome();
    const saved = path.join(home, 'sessions', 'saved');
    fs.mkdirSync(saved, { recursive: true });
    const { dir } = outside();
    fs.symlinkSync(dir, path.join(saved, 'out'));
    for (const filename of ['out/x.json', 'out/new/deeper.md', path.join(saved, 'out', 'victim.json')]) {
      const e = await failure({ home, filename, env: UNMANAGED });
      expect([filename, e.code]).toEqual([filename, 'ESYMLINK_ESCAPE']);
    }
    expect(ls(dir)).toEqual(['victim.json']);
    expect(fs.readFileSync(path.join(dir, 'victim.json'), 'utf8')).toBe('untouched\n');
  });

  it('a symlink that stays inside saved/ is followed', async () => {
    const home = freshHome();
    const saved = path.join(home, 'sessions', 'saved');
    fs.mkdirSync(saved, { recursive: true });
    fs.writeFileSync(path.join(saved, 'real.json'), 'old\n');
    fs.symlinkSync('real.json', path.join(saved, 'alias.json'));
    const r = await saveConversation(CONVERSATION, { home, filename: 'alias.json', env: UNMANAGED });
    expect(r.path).toBe(path.join(saved, 'real.json'));
    expect(fs.lstatSync(path.join(saved, 'alias.json')).isSymbolicLink()).toBe(true);
    expect(modeOf(r.path)).toBe('0600');
  });

  it('sessions/saved/ itself linked out of the home is refused', async () => {
    const home = freshHome();
    fs.mkdirSync(path.join(home, 'sessions'), { recursive: true });
    const { dir } = outside();
    fs.symlinkSync(dir, path.join(home, 'sessions', 'saved'));
    const e = await failure({ home, env: UNMANAGED });
    expect(e.code).toBe('ESYMLINK_ESCAPE');
    expect(ls(dir)).toEqual(['victim.json']);
  });

  it('when the home is reached through a link, the real spelling of sessions/saved/ is accepted too', async () => {
    const root = tempRoot();
    const real = path.join(root, 'real-home');
    const link = path.join(root, 'home-link');
    fs.mkdirSync(path.join(real, 'sessions', 'saved'), { recursive: true });
    fs.symlinkSync(real, link);
    const r = await saveConversation(CONVERSATION, {
      home: link,
      filename: path.join(real, 'sessions', 'saved', 'via-real.json'),
      env: UNMANAGED,
    });
    expect(r.path).toBe(path.join(link, 'sessions', 'saved', 'via-real.json'));
    expect(ls(path.join(real, 'sessions', 'saved'))).toEqual(['via-real.json']);
  });

  it('a name that is empty or ends with a slash is refused', async () => {
    const home = freshHome();
    expect((await failure({ home, filename: '', env: UNMANAGED })).code).toBe('EINVALID_FILENAME');
    expect((await failure({ home, filename: 'dir/', env: UNMANAGED })).code).toBe('EINVALID_FILENAME');
  });
});
