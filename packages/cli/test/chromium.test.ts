import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import type { Browser } from 'playwright-core';
import { chromiumPath, itNeeds, tempRoot } from '@hermes/test-utils';
import { saveConversation } from '../src/index.js';
import { launchChromium, loadAndRecord } from './browser.js';
import { HOSTILE_CONVERSATION, TOOL_RESULT } from './corpus.js';
import { freshHome, UNMANAGED } from './helpers.js';

let browser: Browser | undefined;

beforeAll(async () => {
  if (chromiumPath() !== undefined) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

function open(): Browser {
  if (browser === undefined) throw new Error('chromium did not start');
  return browser;
}

describe('HTML export in real Chromium (playwright-core)', () => {
  itNeeds(['chromium'], 'control: the recorder does see scripts, handlers and requests of a page that has them', async () => {
    const file = path.join(tempRoot('hermes-cli-control-'), 'control.html');
    fs.writeFileSync(
      file,
      `<!DOCTYPE html><title>t</title><img src="https://remote.invalid/x.png" onerror="document.title='PW'+'NED'"><script>document.body.append('PW' + 'NED')</script>`,
    );
    const { page, requests, scripts } = await loadAndRecord(open(), file);
    expect(requests).toEqual(['https://remote.invalid/x.png']);
    expect(scripts.length).toBeGreaterThanOrEqual(2); // the <script> and the onerror handler
    expect(await page.title()).toBe('PWNED');
    await page.context().close();
  });

  itNeeds(['chromium'], 'rendered Markdown, 0 requests, 0 scripts, hostile corpus inert, details open in print', async () => {
    const saved = await saveConversation(HOSTILE_CONVERSATION, { home: freshHome(), format: 'html', env: UNMANAGED });
    const { page, requests, scripts, cspViolations } = await loadAndRecord(open(), saved.path);
    const count = (selector: string): Promise<number> => page.locator(selector).count();
    const text = (selector: string): Promise<string> => page.locator(selector).innerText();

    const figures = {
      requests: requests.length,
      scripts: scripts.length,
      csp: cspViolations.length,
      h1: await count('section.assistant .markdown h1'),
      table: await count('section.assistant .markdown table'),
      python: await count('section.assistant .markdown pre > code.language-python'),
      https: await count('section.assistant .markdown a[href="https://meteofrance.com/"]'),
      mailto: await count('a[href="mailto:ops@example.com"]'),
      imageLinks: await count('a.image-link'),
      img: await count('img'),
      unsafe: await count('script, iframe, svg, object, embed, img, a[href^="javascript:" i], a[href^="data:" i]'),
      // A string, evaluated in the page after recording stopped: elements carrying any on… attribute.
      handlers: await page.evaluate<number>(`[...document.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length`),
      details: await count('details'),
    };
    const result = page.locator('details.tool-result pre');
    const prompt = page.locator('section.system details .markdown li').first();
    const screen = { result: await result.isVisible(), prompt: await prompt.isVisible() };
    await page.emulateMedia({ media: 'print' });
    const print = { result: await result.isVisible(), prompt: await prompt.isVisible() };
    await page.emulateMedia({ media: 'screen' });
    console.log(
      `chromium: requests ${figures.requests}, scripts ${figures.scripts}, CSP violations ${figures.csp}; elements rendered: ` +
        `h1 ${figures.h1}, table ${figures.table}, pre/code.language-python ${figures.python}, https links ${figures.https}, ` +
        `mailto links ${figures.mailto}, image-as-link ${figures.imageLinks}, img ${figures.img}, script/iframe/svg/javascript: ${figures.unsafe}, ` +
        `on* handlers ${figures.handlers}, details ${figures.details}; system prompt + tool result visible on screen ${screen.prompt}/${screen.result}, ` +
        `in print ${print.prompt}/${print.result}`,
    );

    expect(requests).toEqual([]);
    expect(scripts).toEqual([]);
    expect(cspViolations).toEqual([]);
    expect(await page.title()).toBe(`Session: </title><script>document.title='PW'+'NED'</script>`);
    expect(await page.locator('body').innerText()).not.toContain('PWNED');

    // Markdown rendered as a reader expects it.
    expect(figures.h1).toBe(1);
    expect(await text('section.assistant .markdown h1')).toBe('Weather report');
    expect(figures.table).toBe(1);
    expect(await page.locator('section.assistant .markdown table td').allInnerTexts()).toEqual(['Paris', '18', 'Lyon', '14']);
    expect(figures.python).toBe(1);
    expect(await text('code.language-python')).toBe('def forecast(city: str) -> str:\n    return "<clear>" if city == "Paris" else "rain"\n');
    expect(figures.https).toBe(1);
    expect(figures.mailto).toBe(1);
    expect(figures.imageLinks).toBe(2);
    const links = page.locator('a.image-link');
    const imageLinks = [0, 1].map(async (n) => `${await links.nth(n).innerText()} -> ${(await links.nth(n).getAttribute('href')) ?? ''}`);
    expect(await Promise.all(imageLinks)).toEqual(['satellite view -> https://remote.invalid/satellite.png', 'remote pixel -> https://remote.invalid/pixel.png']);
    expect(await text('section.assistant:has(h1) .markdown')).toContain("an unsafe [link](javascript:document.title='PW'+'NED') stays text.");
    // Nothing live from the corpus: no script, frame, image, handler, javascript:/data: link.
    expect(figures.img).toBe(0);
    expect(figures.unsafe).toBe(0);
    expect(figures.handlers).toBe(0);
    expect(await page.locator('section.user').nth(1).innerText()).toContain(`<script>document.title = 'PW' + 'NED'</script>`);

    // System prompt, tool call and tool result: collapsed on screen…
    expect(figures.details).toBe(3);
    expect(await text('section.system details > summary')).toBe('System prompt');
    expect(await text('details.tool-call > summary')).toBe('Tool call: get_weather');
    expect(screen).toEqual({ result: false, prompt: false });
    // …and open in print (emulated print media: no <details> is opened, the stylesheet shows the content).
    expect(print).toEqual({ result: true, prompt: true });
    await page.emulateMedia({ media: 'print' });
    expect(await result.innerText()).toBe(TOOL_RESULT);
    expect(await page.locator('details:not([open])').count()).toBe(3);
    await page.context().close();
  });
});
