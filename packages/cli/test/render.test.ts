import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderConversation, saveConversation } from '../src/index.js';
import { CONVERSATION, freshHome, UNMANAGED } from './helpers.js';

const EXPECTED_JSON = `{
  "id": "20250102_030405_abc123",
  "model": "anthropic/claude-sonnet-4",
  "started_at": 1735787045,
  "title": "Weather check",
  "source": "cli",
  "messages": [
    {
      "role": "system",
      "content": "You are Hermes.",
      "timestamp": 1735787045
    },
    {
      "role": "user",
      "content": "What is the weather in Paris?",
      "timestamp": 1735787046
    },
    {
      "role": "assistant",
      "content": "Let me check.",
      "tool_calls": [
        {
          "id": "call_1",
          "type": "function",
          "function": {
            "name": "get_weather",
            "arguments": "{\\"city\\":\\"Paris\\"}"
          }
        }
      ],
      "timestamp": 1735787047
    },
    {
      "role": "tool",
      "content": "{\\"temp_c\\": 18, \\"sky\\": \\"clear\\"}",
      "tool_call_id": "call_1",
      "tool_name": "get_weather",
      "timestamp": 1735787048
    },
    {
      "role": "assistant",
      "content": "It is 18 °C and clear in Paris.",
      "timestamp": 1735787049
    }
  ]
}
`;

const EXPECTED_MD = `# Session: Weather check
- Session ID: \`20250102_030405_abc123\`
- Source: \`cli\`
- Model: \`anthropic/claude-sonnet-4\`
- Title: Weather check
- Started: 2025-01-02T03:04:05Z
- Messages: 5

## System - 2025-01-02T03:04:05Z

<details><summary>System prompt</summary>

You are Hermes.

</details>

## User - 2025-01-02T03:04:06Z

\`\`\`text
What is the weather in Paris?
\`\`\`

## Assistant - 2025-01-02T03:04:07Z

Let me check.

<details><summary>Tool call: get_weather</summary>

\`\`\`json
{
  "city": "Paris"
}
\`\`\`

</details>

## Tool: get\\_weather - 2025-01-02T03:04:08Z

<details><summary>get_weather</summary>

\`\`\`text
{"temp_c": 18, "sky": "clear"}
\`\`\`

</details>

## Assistant - 2025-01-02T03:04:09Z

It is 18 °C and clear in Paris.
`;

describe('JSON and Markdown output, against hand-written text', () => {
  it('JSON is the export shape (id, model, started_at, title, source, messages), 2-space indent', async () => {
    const r = await saveConversation(CONVERSATION, { home: freshHome(), env: UNMANAGED });
    expect(r.format).toBe('json');
    expect(fs.readFileSync(r.path, 'utf8')).toBe(EXPECTED_JSON);
    expect(r.bytes).toBe(Buffer.byteLength(EXPECTED_JSON));
  });

  it('Markdown: heading, metadata bullets, one section per message, system prompt and tool rows in <details>, answers as Markdown', async () => {
    const r = await saveConversation(CONVERSATION, { home: freshHome(), format: 'md', env: UNMANAGED });
    expect(r.format).toBe('md');
    expect(r.path.endsWith('.md')).toBe(true);
    expect(fs.readFileSync(r.path, 'utf8')).toBe(EXPECTED_MD);
    expect(renderConversation(CONVERSATION, 'md')).toBe(EXPECTED_MD);
  });

  it('in-memory history becomes the export shape (id from sessionId, started_at in epoch seconds)', () => {
    const text = renderConversation({
      model: 'local/model',
      startedAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 500)),
      sessionId: 'live-1',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(text).toBe(`{
  "id": "live-1",
  "model": "local/model",
  "started_at": 1735787045.5,
  "messages": [
    {
      "role": "user",
      "content": "hi"
    }
  ]
}
`);
    expect(renderConversation({ model: null, messages: [{ role: 'user', content: 'hi' }] }, 'md')).toBe(`# Session: unknown
- Session ID: \`unknown\`
- Messages: 1

## User

\`\`\`text
hi
\`\`\`
`);
  });

  it('untrusted text cannot break the Markdown structure', () => {
    const md = renderConversation(
      {
        id: '`rm -rf`',
        model: 'm',
        started_at: null,
        title: '# Fake\n## Injected <img src=x onerror=alert(1)>',
        messages: [
          { role: 'user', content: 'line\n```\n## Forged heading\n</details>\n<script>alert(1)</script>\n`````' },
          { role: 'tool', tool_name: 'evil</summary></details>\n\n# x', content: '``` ```` done' },
        ],
      },
      'md',
    );
    expect(md).toBe(`# Session: \\# Fake \\#\\# Injected \\<img src=x onerror=alert(1)\\>
- Session ID: \`\` \`rm -rf\` \`\`
- Model: \`m\`
- Title: \\# Fake \\#\\# Injected \\<img src=x onerror=alert(1)\\>
- Messages: 2

## User

\`\`\`\`\`\`text
line
\`\`\`
## Forged heading
</details>
<script>alert(1)</script>
\`\`\`\`\`
\`\`\`\`\`\`

## Tool: evil\\</summary\\>\\</details\\>  \\# x

<details><summary>evil&lt;/summary&gt;&lt;/details&gt;  # x</summary>

\`\`\`\`\`text
\`\`\` \`\`\`\` done
\`\`\`\`\`

</details>
`);
  });
});
