import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { chromiumPath } from '@hermes/test-utils';

/** Debian's Chromium driven by playwright-core, with every host unresolvable and every proxy connection refused. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (executablePath === undefined) throw new Error('no chromium on PATH (package: chromium)');
  return chromium.launch({
    executablePath,
    args: ['--host-resolver-rules=MAP * ~NOTFOUND', '--proxy-server=http://127.0.0.1:9', '--disable-background-networking', '--no-first-run'],
  });
}

/** What a page did while it loaded: requests other than the document, scripts of its own, CSP reports. */
export interface LoadRecord {
  readonly page: Page;
  readonly requests: readonly string[];
  readonly scripts: readonly string[];
  readonly cspViolations: readonly string[];
}

/**
 * Opens `file` in a fresh context and records, until the page has loaded and settled, every request but
 * the document's own, every script parsed in the page's own (main-world) JavaScript contexts, and every
 * console message about the Content Security Policy. Nothing is injected before the page's own content.
 */
export async function loadAndRecord(browser: Browser, file: string): Promise<LoadRecord> {
  const url = pathToFileURL(file).href;
  const context = await browser.newContext();
  const page = await context.newPage();
  const requests: string[] = [];
  const scripts: string[] = [];
  const cspViolations: string[] = [];
  page.on('request', (request) => {
    if (request.url() !== url) requests.push(request.url());
  });
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  const cdp = await context.newCDPSession(page);
  const mainWorld = new Set<number>();
  cdp.on('Runtime.executionContextCreated', (event) => {
    const aux = event.context.auxData as { isDefault?: boolean } | undefined;
    if (aux?.isDefault === true) mainWorld.add(event.context.id);
  });
  let recording = true;
  cdp.on('Debugger.scriptParsed', (event) => {
    if (recording && mainWorld.has(event.executionContextId)) scripts.push(event.url === '' ? `inline #${event.scriptId}` : event.url);
  });
  await cdp.send('Runtime.enable');
  await cdp.send('Debugger.enable');
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForTimeout(300);
  recording = false;
  await cdp.send('Debugger.disable');
  return { page, requests, scripts, cspViolations };
}
