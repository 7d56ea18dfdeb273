import { describe, expect, it } from 'vitest';
import { pythonJson, toShareGpt, type ChatMessage } from '../src/index.js';

describe('toShareGpt', () => {
  it('plain chat: human and gpt turns, empty think blocks, system messages dropped', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hi there' },
      { role: 'assistant', content: '  Hello! How can I help?  ' },
      { role: 'user', content: 'Nothing, bye.' },
      { role: 'assistant', content: 'Goodbye.' },
    ];
    expect(toShareGpt(messages, { systemPrompt: null })).toEqual({
      conversations: [
        { from: 'human', value: 'Hi there' },
        { from: 'gpt', value: '<think>\n</think>\n  Hello! How can I help?' },
        { from: 'human', value: 'Nothing, bye.' },
        { from: 'gpt', value: '<think>\n</think>\nGoodbye.' },
      ],
      warnings: [],
    });
  });

  it('default system turn: the function-calling prompt with the tools block in Python json layout', () => {
    const { conversations } = toShareGpt([{ role: 'user', content: 'q' }], {
      tools: [
        {
          type: 'function',
          function: {
            name: 'web_search',
            description: 'Search the web',
            parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
          },
        },
        { name: 'clock' },
      ],
    });
    expect(conversations[0]).toEqual({
      from: 'system',
      value:
        'You are a function calling AI model. You are provided with function signatures within <tools> </tools> XML tags. ' +
        'You may call one or more functions to assist with the user query. If available tools are not relevant in assisting ' +
        "with user query, just respond in natural conversational language. Don't make assumptions about what values to plug " +
        'into functions. After calling & executing the functions, you will be provided with function results within ' +
        '<tool_response> </tool_response> XML tags. Here are the available tools:\n' +
        '<tools>\n' +
        '[{"name": "web_search", "description": "Search the web", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}, "required": null}, ' +
        '{"name": "clock", "description": "", "parameters": {}, "required": null}]\n' +
        '</tools>\n' +
        'For each function call return a JSON object, with the following pydantic model json schema for each:\n' +
        "{'title': 'FunctionCall', 'type': 'object', 'properties': {'name': {'title': 'Name', 'type': 'string'}, " +
        "'arguments': {'title': 'Arguments', 'type': 'object'}}, 'required': ['name', 'arguments']}\n" +
        'Each function call should be enclosed within <tool_call> </tool_call> XML tags.\n' +
        "Example:\n<tool_call>\n{'name': <function-name>,'arguments': <args-dict>}\n</tool_call>",
    });
    expect(conversations[1]).toEqual({ from: 'human', value: 'q' });
  });

  it('no tools: an empty list in the tools block; a custom system prompt is used verbatim', () => {
    const def = toShareGpt([]).conversations[0]?.value ?? '';
    expect(def).toContain('Here are the available tools:\n<tools>\n[]\n</tools>\nFor each function call');
    expect(toShareGpt([], { systemPrompt: 'Be brief.', tools: [{ name: 'x' }] }).conversations).toEqual([
      { from: 'system', value: 'Be brief.' },
    ]);
  });

  it('reasoning: native reasoning and reasoning_content become think blocks; scratchpad tags are rewritten', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'What is 2+2?' },
      { role: 'assistant', content: 'It is 4.', reasoning: 'Add two and two.' },
      { role: 'user', content: 'And 3+3?' },
      { role: 'assistant', content: '6', reasoning_content: 'Three plus three.' },
      { role: 'user', content: 'And 4+4?' },
      {
        role: 'assistant',
        content: '<REASONING_SCRATCHPAD>double four</REASONING_SCRATCHPAD>\n8',
        reasoning: '   ',
      },
    ];
    expect(toShareGpt(messages, { systemPrompt: null }).conversations).toEqual([
      { from: 'human', value: 'What is 2+2?' },
      { from: 'gpt', value: '<think>\nAdd two and two.\n</think>\nIt is 4.' },
      { from: 'human', value: 'And 3+3?' },
      { from: 'gpt', value: '<think>\nThree plus three.\n</think>\n6' },
      { from: 'human', value: 'And 4+4?' },
      { from: 'gpt', value: '<think>double four</think>\n8' },
    ]);
  });

  it('multiple tool calls and responses: one gpt turn, one tool turn with a block per response', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris and Oslo?' },
      {
        role: 'assistant',
        content: 'Checking both.',
        reasoning: 'Two cities, two calls.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city": "Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'weather', arguments: { city: 'Oslo', units: 'metric' } } },
          { id: 'call_3', type: 'function', function: { name: 'clock', arguments: '' } },
        ],
      },
      // Out of order on purpose: names are matched by tool_call_id.
      { role: 'tool', tool_call_id: 'call_2', content: '{"temp": -3, "sky": "snow"}' },
      { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 21°C' },
      { role: 'tool', tool_call_id: 'call_3', content: '[1, 2' },
      { role: 'assistant', content: 'Paris is sunny; Oslo has snow.' },
    ];
    const { conversations, warnings } = toShareGpt(messages, { systemPrompt: null });
    expect(conversations).toEqual([
      { from: 'human', value: 'Weather in Paris and Oslo?' },
      {
        from: 'gpt',
        value:
          '<think>\nTwo cities, two calls.\n</think>\nChecking both.\n' +
          '<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
          '<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo", "units": "metric"}}\n</tool_call>\n' +
          '<tool_call>\n{"name": "clock", "arguments": {}}\n</tool_call>',
      },
      {
        from: 'tool',
        value:
          '<tool_response>\n{"tool_call_id": "call_2", "name": "weather", "content": {"temp": -3, "sky": "snow"}}\n</tool_response>\n' +
          '<tool_response>\n{"tool_call_id": "call_1", "name": "weather", "content": "Sunny, 21°C"}\n</tool_response>\n' +
          '<tool_response>\n{"tool_call_id": "call_3", "name": "clock", "content": "[1, 2"}\n</tool_response>',
      },
      { from: 'gpt', value: '<think>\n</think>\nParis is sunny; Oslo has snow.' },
    ]);
    expect(warnings).toEqual([
      'message 1: tool call call_3 (clock) has arguments that are not valid JSON (0 characters); recorded as {}',
    ]);
  });

  it('malformed tool arguments: {} plus a warning that does not quote the arguments', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'run it' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_x', function: { name: 'terminal', arguments: '{"cmd": "ls", token: sk-secret' } }],
      },
      { role: 'tool', tool_call_id: 'call_x', content: 'file.txt' },
    ];
    const { conversations, warnings } = toShareGpt(messages, { systemPrompt: null });
    expect(conversations).toEqual([
      { from: 'human', value: 'run it' },
      { from: 'gpt', value: '<think>\n</think>\n<tool_call>\n{"name": "terminal", "arguments": {}}\n</tool_call>' },
      {
        from: 'tool',
        value: '<tool_response>\n{"tool_call_id": "call_x", "name": "terminal", "content": "file.txt"}\n</tool_response>',
      },
    ]);
    expect(warnings).toEqual([
      'message 1: tool call call_x (terminal) has arguments that are not valid JSON (30 characters); recorded as {}',
    ]);
  });

  it('multimodal content: parts flattened, images become [screenshot], multimodal results their summary', () => {
    const messages: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is on screen?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Let me look closer.' }],
        tool_calls: [{ id: 'c1', function: { name: 'computer_use', arguments: '{"action": "screenshot"}' } }, { id: 'c2', function: { name: 'vision', arguments: '{}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: {
          _multimodal: true,
          content: [{ type: 'text', text: 'ignored' }, { type: 'image', data: 'BASE64' }],
          text_summary: 'Screenshot taken: a login form.',
        },
      },
      {
        role: 'tool',
        tool_call_id: 'c2',
        content: { _multimodal: true, content: [{ type: 'image', data: 'BASE64' }, { type: 'text', text: 'A login form' }, { type: 'text', text: 'with two fields' }] },
      },
      { role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] },
    ];
    expect(toShareGpt(messages, { systemPrompt: null })).toEqual({
      conversations: [
        { from: 'human', value: 'What is on screen?\n[screenshot]\n[input_audio]' },
        {
          from: 'gpt',
          value:
            '<think>\n</think>\nLet me look closer.\n' +
            '<tool_call>\n{"name": "computer_use", "arguments": {"action": "screenshot"}}\n</tool_call>\n' +
            '<tool_call>\n{"name": "vision", "arguments": {}}\n</tool_call>',
        },
        {
          from: 'tool',
          value:
            '<tool_response>\n{"tool_call_id": "c1", "name": "computer_use", "content": "Screenshot taken: a login form."}\n</tool_response>\n' +
            '<tool_response>\n{"tool_call_id": "c2", "name": "vision", "content": "A login form\\nwith two fields"}\n</tool_response>',
        },
        { from: 'human', value: '[screenshot]' },
      ],
      warnings: [],
    });
  });

  it('tool responses without an assistant tool call are kept (named from the message) and warned about', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'x' },
      { role: 'tool', tool_call_id: 'orphan', name: 'memory', content: 'ok' },
      { role: 'tool', content: 'also ok' },
    ];
    expect(toShareGpt(messages, { systemPrompt: null })).toEqual({
      conversations: [
        { from: 'human', value: 'x' },
        {
          from: 'tool',
          value:
            '<tool_response>\n{"tool_call_id": "orphan", "name": "memory", "content": "ok"}\n</tool_response>\n' +
            '<tool_response>\n{"tool_call_id": "", "name": "unknown", "content": "also ok"}\n</tool_response>',
        },
      ],
      warnings: ['message 1: tool response without a preceding assistant tool call; names taken from the message'],
    });
  });
});

describe('pythonJson', () => {
  it('matches json.dumps(ensure_ascii=False) layout', () => {
    expect(pythonJson({ a: [1, 2.5, true, null], 'ü': 'é\n"\\\u0001', nested: {}, list: [], skip: undefined })).toBe(
      '{"a": [1, 2.5, true, null], "ü": "é\\n\\"\\\\\\u0001", "nested": {}, "list": []}',
    );
    expect(pythonJson(undefined)).toBe('null');
  });
});
