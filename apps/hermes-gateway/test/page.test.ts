/**
 * The page in real Chromium (playwright-core, Debian's chromium): send two messages, watch the transcript
 * (user messages and the runner's replies), press "Save (HTML)" and get the rendered export as a download.
 */
import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { chromiumPath, itNeeds } from '@hermes/test-utils';
import { freshHome, startReady, userRows, type Child } from './helpers.js';

let browser: Browser | undefined;
let gw: Child | undefined;

beforeAll(async () => {
  const executablePath = chromiumPath();
  if (executablePath === undefined) return;
  browser = await chromium.launch({ executablePath, args: ['--proxy-server=http://127.0.0.1:9', '--proxy-bypass-list=127.0.0.1', '--disable-background-networking', '--no-first-run'] });
});
afterAll(async () => {
  await browser?.close();
  gw?.proc.kill('SIGTERM');
  await gw?.exited;
});

describe('the page in real Chromium', () => {
  itNeeds(['chromium'], 'send, watch the transcript, save: the download is the HTML export of the session', async () => {
    if (browser === undefined) throw new Error('chromium did not start');
    const home = freshHome();
    gw = await startReady(home, ['--reply-template', 'reply to <{text}>']);
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      // A session with no message yet is a 404 the page expects (an empty transcript), and so is /favicon.ico.
      if (m.type() === 'error' && !m.text().includes('status of 404')) errors.push(m.text());
    });
    await page.goto(gw.url);
    await page.fill('#session', 'agent:main:web:page');
    await page.click('#session-form button');
    for (const text of ['hello <b>bold</b>', 'second']) {
      await page.fill('#text', text);
      await page.click('#send');
      // Locators, not page functions: the page's CSP forbids evaluating strings.
      await page.locator('#transcript li.user', { hasText: text }).waitFor();
    }
    await page.locator('#transcript li.assistant').nth(1).waitFor();
    const items = await page.locator('#transcript li').allInnerTexts();
    const bold = await page.locator('#transcript b').count();
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#save')]);
    const file = await download.path();
    const html = fs.readFileSync(file, 'utf8');
    console.log(
      `page: ${String(items.length)} transcript items, injected <b> elements ${String(bold)}, download ${download.suggestedFilename()} ` +
        `(${String(html.length)} bytes), page errors ${String(errors.length)}`,
    );
    // Each item: the role (a label) followed by the message text, inserted as text.
    expect(items).toEqual(['userhello <b>bold</b>', 'assistantreply to <hello <b>bold</b>>', 'usersecond', 'assistantreply to <second>']);
    expect(bold).toBe(0);
    expect(download.suggestedFilename()).toMatch(/^hermes_conversation_\d{8}_\d{6}\.html$/);
    expect(html).toContain('<!DOCTYPE html>');
    expect(html).toContain('hello &lt;b&gt;bold&lt;/b&gt;');
    expect(fs.readdirSync(`${home}/sessions/saved`)).toEqual([download.suggestedFilename()]);
    expect(userRows(home, 'agent:main:web:page').map((r) => r.content)).toEqual(['hello <b>bold</b>', 'second']);
    expect(errors).toEqual([]);
    await context.close();
  });
});
