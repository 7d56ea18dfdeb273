import MarkdownIt from 'markdown-it';
import { describe, expect, it } from 'vitest';
import { renderConversation } from '../src/index.js';
import { neutraliseMarkdown } from '../src/render/md-neutralise.js';
import { HOSTILE, HOSTILE_CONVERSATION } from './corpus.js';

/** How a lax viewer shows the .md later: CommonMark with raw HTML on; once with markdown-it's link check, once with none. */
const VIEWERS = {
  'markdown-it html:true': new MarkdownIt({ html: true }),
  'markdown-it html:true, every scheme': Object.assign(new MarkdownIt({ html: true, linkify: true }), { validateLink: () => true }),
};

function liveMarkup(html: string): string[] {
  const found = [
    ...html.matchAll(/<(script|iframe|img|svg|style|object|embed)[\s>]/gi),
    ...html.matchAll(/<[a-z][^>]*\son[a-z]+\s*=/gi),
    ...html.matchAll(/href\s*=\s*"\s*(?:javascript|data|vbscript):/gi),
  ];
  return found.map((m) => m[0]);
}

describe('.md export: answers stay Markdown, raw HTML is neutralised', () => {
  it('rendered again with raw HTML on, the hostile corpus yields no live markup; the Markdown still renders', () => {
    const md = renderConversation(HOSTILE_CONVERSATION, 'md');
    const figures: string[] = [];
    for (const [name, viewer] of Object.entries(VIEWERS)) {
      const html = viewer.render(md);
      expect(liveMarkup(html)).toEqual([]);
      expect(html).not.toContain('PWNED');
      const count = (re: RegExp): number => html.match(re)?.length ?? 0;
      const rendered = {
        h1: count(/<h1>Weather report<\/h1>/g),
        table: count(/<table>/g),
        python: count(/<pre><code class="language-python">/g),
        https: count(/<a href="https:\/\/meteofrance\.com\/">/g),
        details: count(/<details>/g),
        sections: count(/<h2>/g),
      };
      expect(rendered).toEqual({ h1: 1, table: 1, python: 1, https: 1, details: 3, sections: HOSTILE_CONVERSATION.messages.length });
      figures.push(`${name}: live markup 0, h1 ${rendered.h1}, table ${rendered.table}, python ${rendered.python}, https ${rendered.https}, details ${rendered.details}, sections ${rendered.sections}`);
    }
    console.log(`md export re-rendered: ${figures.join('; ')}`);
  });

  it('each hostile answer, neutralised, as literal text', () => {
    expect(HOSTILE.map((text) => neutraliseMarkdown(text))).toEqual([
      `\\<script>document.title = 'PW' + 'NED'\\</script>`,
      `\\</textarea>\\<script>document.body.append('PW' + 'NED')\\</script>`,
      `He said "hi" & she said 'bye' \\<b>bold?\\</b>`,
      `\\<img src=x onerror="document.title = 'PW' + 'NED'">`,
      `click \\<a href="javascript:document.title='PW'+'NED'">here\\</a> or javascript:alert(1) or https://example.com/?a=1&b=2`,
      `\\</div>\\</section>\\</main>\\<iframe srcdoc="\\<script>parent.document.title='PW'+'NED'\\</script>">\\</iframe>`,
      `\\<style>body { display: none }\\</style>\\<svg onload="document.title='PW'+'NED'">\\</svg>`,
      `[a markdown link]\\(javascript:document.title='PW'+'NED') and \\<javascript:alert(1)> and [entity]\\(jav&#97;script:alert(1))`,
      `\\![remote pixel](https://remote.invalid/pixel.png) \\![data]\\(data:image/png;base64,AAAA) \\<img src="https://remote.invalid/x.png">`,
      `[ref]\\: javascript:document.title='PW'+'NED'\n\nsee [ref] and [mail](mailto:ops@example.com)`,
    ]);
  });

  it('code is left byte-identical; an open fence is closed; what cannot be proven inert is fenced', () => {
    expect(neutraliseMarkdown('Use `<div>` or\n\n```html\n<script>x()</script>\n```\n\n    <b>indented</b>')).toBe(
      'Use `<div>` or\n\n```html\n<script>x()</script>\n```\n\n    <b>indented</b>',
    );
    expect(neutraliseMarkdown('open:\n````js\nlet a = 1;\n```')).toBe('open:\n````js\nlet a = 1;\n```\n````');
    // A table splits cells before code spans: the scanner's code span is not the renderer's, so no guarantee.
    expect(neutraliseMarkdown('| `a | <script>x()</script>` |\n|---|---|\n| b | c |')).toBeUndefined();
    const md = renderConversation(
      {
        id: 's',
        model: 'm',
        started_at: null,
        messages: [
          { role: 'assistant', content: '| `a | <script>x()</script>` |\n|---|---|\n| b | c |' },
          { role: 'assistant', content: '```\nnever closed' },
          { role: 'user', content: 'still a section' },
        ],
      },
      'md',
    );
    expect(md).toBe(`# Session: s
- Session ID: \`s\`
- Model: \`m\`
- Messages: 3

## Assistant

\`\`\`text
| \`a | <script>x()</script>\` |
|---|---|
| b | c |
\`\`\`

## Assistant

\`\`\`
never closed
\`\`\`

## User

\`\`\`text
still a section
\`\`\`
`);
  });
});
