import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chromiumPath, itNeeds, tempRoot } from '@hermes/test-utils';
import { renderConversation, saveConversation, type ConversationSnapshot } from '../src/index.js';
import { freshHome, UNMANAGED } from './helpers.js';

// Each hostile message, if it ever ran, would write the marker PWNED (built from two halves, so the
// marker never appears in the page as text) into the title or the body.
const HOSTILE = [
  `<script>document.title = 'PW' + 'NED'</script>`,
  `</textarea><script>document.body.append('PW' + 'NED')</script>`,
  `He said "hi" & she said 'bye' <b>bold?</b>`,
  `<img src=x onerror="document.title = 'PW' + 'NED'">`,
  `click <a href="javascript:document.title='PW'+'NED'">here</a> or javascript:alert(1) or https://example.com/?a=1&b=2`,
  `</div></section></main><iframe srcdoc="<script>parent.document.title='PW'+'NED'</script>"></iframe>`,
  `<style>body { display: none }</style><svg onload="document.title='PW'+'NED'"></svg>`,
];

const CONVERSATION: ConversationSnapshot = {
  id: 'html-<session>',
  model: 'm"odel',
  started_at: 1735787045,
  title: `</title><script>document.title='PW'+'NED'</script>`,
  source: 'cli',
  messages: [
    ...HOSTILE.map((content, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content, timestamp: 1735787046 + i })),
    {
      role: 'assistant',
      content: 'calling a tool',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: '<b>tool</b>', arguments: '{"q":"<script>x</script>"}' } }],
    },
    { role: 'tool', tool_name: '<b>tool</b>', content: `</details><script>document.title='PW'+'NED'</script>` },
  ],
};

/** Text content as an HTML serialiser writes it (what --dump-dom prints for a text node). */
function asSerializedText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\u00a0/g, '&nbsp;');
}

const CHROMIUM = chromiumPath();

/** Loads a file in headless Chromium with networking cut off and returns the DOM after load. */
function dumpDom(file: string): string {
  if (CHROMIUM === undefined) throw new Error('no chromium');
  const profile = fs.mkdtempSync(path.join(tempRoot('hermes-cli-chromium-'), 'profile-'));
  const r = spawnSync(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
      // No network: every host name fails to resolve and every connection goes to a closed proxy port.
      '--host-resolver-rules=MAP * ~NOTFOUND',
      '--proxy-server=http://127.0.0.1:9',
      `--user-data-dir=${profile}`,
      '--dump-dom',
      `file://${file}`,
    ],
    { encoding: 'utf8', timeout: 90_000, maxBuffer: 64 * 1024 * 1024 },
  );
  if (r.error) throw r.error;
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe('HTML: one self-contained, inert page', () => {
  it('every piece of message text is escaped; no tag, handler or link comes from a message', () => {
    const html = renderConversation(CONVERSATION, 'html');
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'none'; img-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">`);
    expect(html).toContain('&lt;script&gt;document.title = &#39;PW&#39; + &#39;NED&#39;&lt;/script&gt;');
    // Odd entries are the assistant's, rendered from Markdown with raw HTML off: tags are text in a paragraph.
    expect(html).toContain(`<p>&lt;/textarea&gt;&lt;script&gt;document.body.append('PW' + 'NED')&lt;/script&gt;</p>`);
    expect(html).toContain('He said &quot;hi&quot; &amp; she said &#39;bye&#39; &lt;b&gt;bold?&lt;/b&gt;');
    expect(html).toContain(`<p>&lt;img src=x onerror=&quot;document.title = 'PW' + 'NED'&quot;&gt;</p>`);
    expect(html).toContain(
      `<p>&lt;/div&gt;&lt;/section&gt;&lt;/main&gt;&lt;iframe srcdoc=&quot;&lt;script&gt;parent.document.title='PW'+'NED'&lt;/script&gt;&quot;&gt;&lt;/iframe&gt;</p>`,
    );
    expect(html).toContain(
      'click &lt;a href=&quot;javascript:document.title=&#39;PW&#39;+&#39;NED&#39;&quot;&gt;here&lt;/a&gt; or javascript:alert(1) or https://example.com/?a=1&amp;b=2',
    );
    expect(html).toContain('<title>Session: &lt;/title&gt;&lt;script&gt;document.title=&#39;PW&#39;+&#39;NED&#39;&lt;/script&gt;</title>');
    expect(html).toContain('<summary>Tool call: &lt;b&gt;tool&lt;/b&gt;</summary>');
    expect(html).toContain('&quot;q&quot;: &quot;&lt;script&gt;x&lt;/script&gt;&quot;');
    expect(html).toContain('<summary>Result: &lt;b&gt;tool&lt;/b&gt;</summary>');
    // Structure: every tag is the page's own (message text never yields a `<`): no script, anchor, handler,
    // frame or external resource, and no attribute but the page's own.
    const tags = html.match(/<\/?[A-Za-z][^>]*>/g) ?? [];
    const names = [...new Set(tags.map((t) => /^<\/?([A-Za-z0-9]+)/.exec(t)?.[1]?.toLowerCase()))].sort();
    expect(names).toEqual(
      ['body', 'code', 'dd', 'details', 'div', 'dl', 'dt', 'h1', 'h2', 'head', 'header', 'html', 'main', 'meta', 'p', 'pre', 'section', 'span', 'style', 'summary', 'title'],
    );
    const attributes = [...new Set(tags.flatMap((t) => [...t.replace(/"[^"]*"/g, '""').matchAll(/\s([A-Za-z-]+)=/g)].map((m) => m[1])))].sort();
    expect(attributes).toEqual(['charset', 'class', 'content', 'http-equiv', 'lang', 'name']);
    expect(html).not.toMatch(/url\(|@import|https?:\/\/(?!example\.com\/\?a=1&amp;b=2)/);
    expect(html.match(/<style>/g)).toHaveLength(1);
    expect(html.match(/<details /g)).toHaveLength(2);
    expect(html.match(/<section /g)).toHaveLength(CONVERSATION.messages.length);
  });

  itNeeds(['chromium'], 'control: the harness does see a script that runs', () => {
    const file = path.join(tempRoot('hermes-cli-control-'), 'control.html');
    fs.writeFileSync(file, `<!DOCTYPE html><title>t</title><body><script>document.title = 'PW' + 'NED'; document.body.append('PW' + 'NED')</script>`);
    const dom = dumpDom(file);
    expect(dom).toContain('<title>PWNED</title>');
  });

  itNeeds(['chromium'], 'headless Chromium, network off: every message is shown, no script runs', async () => {
    const r = await saveConversation(CONVERSATION, { home: freshHome(), format: 'html', env: UNMANAGED });
    const dom = dumpDom(r.path);
    for (const text of HOSTILE) expect(dom).toContain(asSerializedText(text));
    expect(dom).toContain(asSerializedText(`</details><script>document.title='PW'+'NED'</script>`));
    expect(dom).toContain(asSerializedText('{\n  "q": "<script>x</script>"\n}'));
    expect(dom).not.toContain('PWNED');
    expect(dom).toContain(`<title>${asSerializedText(`Session: </title><script>document.title='PW'+'NED'</script>`)}</title>`);
    expect(dom.match(/<section class="message /g)).toHaveLength(CONVERSATION.messages.length);
    expect(dom).not.toMatch(/<(script|a|img|iframe|svg)[\s>]/i);
  });
});
