import type { ConversationSnapshot } from '../src/index.js';

/**
 * Hostile message bodies. Each one, if it ever ran, would write the marker PWNED (built from two halves, so
 * the marker never appears in the page as text) into the title or the body, or fetch a remote resource.
 */
export const HOSTILE = [
  `<script>document.title = 'PW' + 'NED'</script>`,
  `</textarea><script>document.body.append('PW' + 'NED')</script>`,
  `He said "hi" & she said 'bye' <b>bold?</b>`,
  `<img src=x onerror="document.title = 'PW' + 'NED'">`,
  `click <a href="javascript:document.title='PW'+'NED'">here</a> or javascript:alert(1) or https://example.com/?a=1&b=2`,
  `</div></section></main><iframe srcdoc="<script>parent.document.title='PW'+'NED'</script>"></iframe>`,
  `<style>body { display: none }</style><svg onload="document.title='PW'+'NED'"></svg>`,
  `[a markdown link](javascript:document.title='PW'+'NED') and <javascript:alert(1)> and [entity](jav&#97;script:alert(1))`,
  `![remote pixel](https://remote.invalid/pixel.png) ![data](data:image/png;base64,AAAA) <img src="https://remote.invalid/x.png">`,
  `[ref]: javascript:document.title='PW'+'NED'\n\nsee [ref] and [mail](mailto:ops@example.com)`,
];

/** An answer using the Markdown a chat model writes: heading, list, table, fenced code, links. */
export const RICH_ANSWER = `# Weather report

The forecast, **in short**:

- Paris: *clear*
- Lyon: \`rain\`

| City | °C |
|------|---:|
| Paris | 18 |
| Lyon | 14 |

\`\`\`python
def forecast(city: str) -> str:
    return "<clear>" if city == "Paris" else "rain"
\`\`\`

Source: [Météo-France](https://meteofrance.com/) — an unsafe [link](javascript:document.title='PW'+'NED') stays text.

![satellite view](https://remote.invalid/satellite.png)
`;

export const SYSTEM_PROMPT = 'You are **Hermes**, a careful assistant.\n\n- answer briefly\n- cite sources';
export const TOOL_RESULT = '{"temp_c": 18, "sky": "clear", "note": "</details><script>document.title=\'PW\'+\'NED\'</script>"}';

/** A conversation with every kind of message, the rich answer and the hostile corpus (as user and assistant). */
export const HOSTILE_CONVERSATION: ConversationSnapshot = {
  id: 'html-<session>',
  model: 'm"odel',
  started_at: 1735787045,
  title: `</title><script>document.title='PW'+'NED'</script>`,
  source: 'cli',
  messages: [
    { role: 'system', content: SYSTEM_PROMPT, timestamp: 1735787045 },
    { role: 'user', content: 'What is the weather in Paris?', timestamp: 1735787046 },
    {
      role: 'assistant',
      content: 'Let me check.',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","q":"<script>x</script>"}' } }],
      timestamp: 1735787047,
    },
    { role: 'tool', tool_name: 'get_weather', content: TOOL_RESULT, timestamp: 1735787048 },
    { role: 'assistant', content: RICH_ANSWER, timestamp: 1735787049 },
    ...HOSTILE.flatMap((content, i) => [
      { role: 'user', content, timestamp: 1735787050 + 2 * i },
      { role: 'assistant', content, timestamp: 1735787051 + 2 * i },
    ]),
  ],
};
