#!/usr/bin/env node
// Renders a sample transcript with the built package and writes one screenshot per colour scheme:
// docs/img/transcript-light.png and docs/img/transcript-dark.png (repository root).
// Usage: pnpm -C packages/cli build && pnpm -C packages/cli screenshots
// Needs Chromium on PATH (Debian: chromium); the page is opened from a file with networking cut off.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { renderConversation } from '../dist/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const outDir = path.join(root, 'docs', 'img');

function findChromium() {
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
      const candidate = path.join(dir, name);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        return candidate;
      } catch {
        // not in this directory
      }
    }
  }
  throw new Error('screenshots: Chromium not found on PATH (Debian: apt-get install chromium)');
}

const ANSWER = `## Paris this week

Mostly **dry**, with one rainy day:

- Monday to Wednesday: clear, up to 18 °C
- Thursday: showers, take an umbrella

| Day | Sky | °C |
|-----|-----|---:|
| Mon | clear | 18 |
| Thu | rain | 14 |

\`\`\`python
def umbrella(day: str) -> bool:
    return day == "Thu"
\`\`\`

Source: [Météo-France](https://meteofrance.com/).`;

const SAMPLE = {
  id: '20250102_030405_abc123',
  model: 'anthropic/claude-sonnet-4',
  started_at: 1735787045,
  title: 'Weather check',
  source: 'cli',
  messages: [
    { role: 'system', content: 'You are **Hermes**, a careful assistant. Answer briefly and cite sources.', timestamp: 1735787045 },
    { role: 'user', content: 'What is the weather in Paris this week?', timestamp: 1735787046 },
    {
      role: 'assistant',
      content: 'Let me check the forecast.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_forecast', arguments: '{"city":"Paris","days":7}' } }],
      timestamp: 1735787047,
    },
    { role: 'tool', tool_name: 'get_forecast', content: '{"mon": 18, "thu": 14, "sky": ["clear", "rain"]}', tool_call_id: 'call_1', timestamp: 1735787048 },
    { role: 'assistant', content: ANSWER, timestamp: 1735787049 },
  ],
};

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-screenshots-'));
const page = path.join(work, 'transcript.html');
fs.writeFileSync(page, renderConversation(SAMPLE, 'html'));
fs.mkdirSync(outDir, { recursive: true });

const browser = await chromium.launch({
  executablePath: findChromium(),
  args: ['--host-resolver-rules=MAP * ~NOTFOUND', '--proxy-server=http://127.0.0.1:9', '--disable-background-networking'],
});
try {
  for (const scheme of ['light', 'dark']) {
    const context = await browser.newContext({ viewport: { width: 900, height: 900 }, colorScheme: scheme, deviceScaleFactor: 1 });
    const tab = await context.newPage();
    await tab.goto(pathToFileURL(page).href, { waitUntil: 'load' });
    // Show one tool call open, as a reader would after a click.
    await tab.locator('details.tool-call > summary').first().click();
    const file = path.join(outDir, `transcript-${scheme}.png`);
    await tab.screenshot({ path: file, fullPage: true });
    await context.close();
    console.log(`screenshots: ${path.relative(root, file)} (${fs.statSync(file).size} bytes)`);
  }
} finally {
  await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
}
