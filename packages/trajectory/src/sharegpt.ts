import { pythonJson } from './pyjson.js';

/** One ShareGPT turn. */
export interface ShareGptTurn {
  readonly from: 'system' | 'human' | 'gpt' | 'tool';
  readonly value: string;
}

/** A content part of an OpenAI-style multimodal message (`{type: 'text', text}`, `{type: 'image_url', …}`, …). */
export interface ContentPart {
  readonly type: string;
  readonly text?: string | undefined;
  readonly [key: string]: unknown;
}

/**
 * The envelope multimodal tools return (`{_multimodal: true, content: [...parts], text_summary?}`); in a
 * trajectory it is replaced by its text summary.
 */
export interface MultimodalToolResult {
  readonly _multimodal: true;
  readonly content: readonly (ContentPart | string)[];
  readonly text_summary?: string | null | undefined;
}

export type MessageContent = string | readonly (ContentPart | string)[] | MultimodalToolResult | null | undefined;

/** An OpenAI-style tool call on an assistant message. */
export interface ChatToolCall {
  readonly id?: string | undefined;
  readonly type?: string | undefined;
  readonly function: {
    readonly name: string;
    /** A JSON string (as the API sends it) or an already parsed object. */
    readonly arguments?: string | Readonly<Record<string, unknown>> | null | undefined;
  };
}

/** An OpenAI-style chat message, as the agent keeps its history. */
export interface ChatMessage {
  readonly role: string;
  readonly content?: MessageContent;
  /** Native reasoning tokens (`reasoning`; `reasoning_content` is read when `reasoning` is absent). */
  readonly reasoning?: string | null | undefined;
  readonly reasoning_content?: string | null | undefined;
  readonly tool_calls?: readonly ChatToolCall[] | null | undefined;
  readonly tool_call_id?: string | undefined;
  /** On tool messages: the tool's name (used when no tool call matches the response). */
  readonly name?: string | undefined;
}

/** A tool definition: OpenAI's `{type: 'function', function: {...}}` or the bare function object. */
export type ToolDefinition =
  | {
      readonly type?: string | undefined;
      readonly function: ToolFunction;
    }
  | ToolFunction;

export interface ToolFunction {
  readonly name: string;
  readonly description?: string | undefined;
  readonly parameters?: Readonly<Record<string, unknown>> | undefined;
}

export interface ShareGptOptions {
  /** The tools offered to the model, rendered into the default system prompt's `<tools>` block. */
  readonly tools?: readonly ToolDefinition[] | undefined;
  /**
   * The system turn. Omitted: the reference's function-calling prompt with the `<tools>` block built from
   * `tools`. A string: used verbatim (then `tools` is not rendered). `null`: no system turn.
   */
  readonly systemPrompt?: string | null | undefined;
}

export interface ShareGptResult {
  readonly conversations: ShareGptTurn[];
  /**
   * Things the conversion had to paper over, one line each: tool-call arguments that were not valid JSON
   * (recorded as `{}`), tool responses with no assistant tool call before them. The argument text itself is
   * never quoted here (it may hold secrets); the line names the message index, call id and tool.
   */
  readonly warnings: string[];
}

const SCRATCHPAD_OPEN = '<REASONING_SCRATCHPAD>';
const SCRATCHPAD_CLOSE = '</REASONING_SCRATCHPAD>';
const IMAGE_PART_TYPES: ReadonlySet<string> = new Set(['image_url', 'image', 'input_image']);
const TEXT_PART_TYPES: ReadonlySet<string> = new Set(['text', 'input_text', 'output_text']);
const EMPTY_THINK = '<think>\n</think>\n';

/** `<REASONING_SCRATCHPAD>` → `<think>` (models that reason in XML when native thinking is off). */
export function scratchpadToThink(content: string): string {
  return content.replaceAll(SCRATCHPAD_OPEN, '<think>').replaceAll(SCRATCHPAD_CLOSE, '</think>');
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isMultimodalResult(value: unknown): value is MultimodalToolResult {
  return isRecord(value) && value._multimodal === true && Array.isArray(value.content);
}

function partText(part: unknown): string {
  if (typeof part === 'string') return part;
  if (!isRecord(part)) return pythonJson(part);
  const type = typeof part.type === 'string' ? part.type : '';
  if (TEXT_PART_TYPES.has(type)) return typeof part.text === 'string' ? part.text : '';
  if (IMAGE_PART_TYPES.has(type)) return '[screenshot]';
  return type === '' ? pythonJson(part) : `[${type}]`;
}

/**
 * Flattens message content to text, as trajectories are text-only: a string stays as it is; content parts
 * are joined with `\n` (text parts by their text, image parts as `[screenshot]` — the reference's
 * placeholder, so no base64 blob lands in training data — any other part as `[<type>]`); a multimodal tool
 * result becomes its `text_summary`, else its text parts, else `[multimodal tool result]`.
 */
export function flattenContent(content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (isMultimodalResult(content)) {
    if (typeof content.text_summary === 'string' && content.text_summary !== '') return content.text_summary;
    const texts = content.content
      .filter((p): p is ContentPart => isRecord(p) && p.type === 'text')
      .map((p) => (typeof p.text === 'string' ? p.text : ''));
    return texts.length > 0 ? texts.join('\n') : '[multimodal tool result]';
  }
  if (Array.isArray(content)) return content.map(partText).join('\n');
  if (typeof content === 'number' || typeof content === 'boolean') return String(content);
  return pythonJson(content);
}

function formatTools(tools: readonly ToolDefinition[]): string {
  const formatted = tools.map((tool) => {
    const fn: ToolFunction = 'function' in tool ? tool.function : tool;
    return { name: fn.name, description: fn.description ?? '', parameters: fn.parameters ?? {}, required: null };
  });
  return pythonJson(formatted);
}

/** The reference's fixed function-calling system prompt with `tools` in its `<tools>` block. */
export function toolCallingSystemPrompt(tools: readonly ToolDefinition[] = []): string {
  return (
    'You are a function calling AI model. You are provided with function signatures within <tools> </tools> XML tags. ' +
    'You may call one or more functions to assist with the user query. If available tools are not relevant in assisting ' +
    "with user query, just respond in natural conversational language. Don't make assumptions about what values to plug " +
    'into functions. After calling & executing the functions, you will be provided with function results within ' +
    '<tool_response> </tool_response> XML tags. Here are the available tools:\n' +
    `<tools>\n${formatTools(tools)}\n</tools>\n` +
    'For each function call return a JSON object, with the following pydantic model json schema for each:\n' +
    "{'title': 'FunctionCall', 'type': 'object', 'properties': {'name': {'title': 'Name', 'type': 'string'}, " +
    "'arguments': {'title': 'Arguments', 'type': 'object'}}, 'required': ['name', 'arguments']}\n" +
    'Each function call should be enclosed within <tool_call> </tool_call> XML tags.\n' +
    "Example:\n<tool_call>\n{'name': <function-name>,'arguments': <args-dict>}\n</tool_call>"
  );
}

function callName(call: ChatToolCall | undefined): string | undefined {
  const name: unknown = call?.function.name;
  return typeof name === 'string' ? name : undefined;
}

function toolCallsOf(message: ChatMessage | undefined): readonly ChatToolCall[] {
  if (message?.role !== 'assistant') return [];
  const calls: unknown = message.tool_calls;
  if (!Array.isArray(calls)) return [];
  return (calls as unknown[]).filter((c): c is ChatToolCall => isRecord(c) && isRecord(c.function));
}

function parseArguments(call: ChatToolCall, index: number, warnings: string[]): unknown {
  const raw = call.function.arguments;
  if (raw === null || raw === undefined) return {};
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    const id = call.id ?? '(no id)';
    warnings.push(
      `message ${index}: tool call ${id} (${callName(call) ?? 'unknown'}) has arguments that are not valid JSON ` +
        `(${raw.length} characters); recorded as {}`,
    );
    return {};
  }
}

function reasoningOf(message: ChatMessage): string | undefined {
  const reasoning = message.reasoning ?? message.reasoning_content;
  return typeof reasoning === 'string' && reasoning.trim() !== '' ? reasoning : undefined;
}

function assistantValue(message: ChatMessage, index: number, warnings: string[]): string {
  const reasoning = reasoningOf(message);
  let value = reasoning === undefined ? '' : `<think>\n${reasoning}\n</think>\n`;
  const text = flattenContent(message.content);
  const calls = toolCallsOf(message);
  if (calls.length === 0) {
    value += scratchpadToThink(text);
    // Every gpt turn carries a <think> block (empty without reasoning) so the training format is uniform.
    if (!value.includes('<think>')) value = EMPTY_THINK + value;
    return value.trim();
  }
  if (text.trim() !== '') value += `${scratchpadToThink(text)}\n`;
  for (const call of calls) {
    const payload = { name: callName(call) ?? 'unknown', arguments: parseArguments(call, index, warnings) };
    value += `<tool_call>\n${pythonJson(payload)}\n</tool_call>\n`;
  }
  if (!value.includes('<think>')) value = EMPTY_THINK + value;
  return value.trimEnd();
}

function toolContent(content: unknown): unknown {
  const text = flattenContent(content);
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

function toolResponse(message: ChatMessage, calls: readonly ChatToolCall[], position: number): string {
  const id = typeof message.tool_call_id === 'string' ? message.tool_call_id : '';
  const byId = id === '' ? undefined : calls.find((c) => c.id === id);
  const name = callName(byId) ?? callName(calls[position]) ?? message.name ?? 'unknown';
  const body = { tool_call_id: id, name, content: toolContent(message.content) };
  return `<tool_response>\n${pythonJson(body)}\n</tool_response>`;
}

/**
 * Converts an OpenAI-style chat history into ShareGPT turns, the trajectory format of the Python agent:
 *
 * - a `system` turn first: the function-calling prompt with a `<tools>` block (see {@link ShareGptOptions});
 *   `system` (and any other role) messages of the history are not carried over;
 * - `user` → `human`, content flattened to text;
 * - `assistant` → `gpt`: `<think>\n{reasoning}\n</think>\n` (an empty think block when there is none), the
 *   content with `<REASONING_SCRATCHPAD>` rewritten to `<think>`, then one
 *   `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>` per call (arguments that are not valid JSON
 *   become `{}` and add a warning);
 * - each run of `tool` messages → one `tool` turn of `<tool_response>\n{"tool_call_id", "name", "content"}\n</tool_response>`
 *   blocks joined by `\n`; content that looks like JSON is embedded parsed; the name comes from the
 *   assistant's tool call with the same id, else the call at the same position, else the message's `name`.
 *
 * JSON inside the turns uses Python's `json.dumps` layout, like the reference.
 */
export function toShareGpt(messages: readonly ChatMessage[], options: ShareGptOptions = {}): ShareGptResult {
  const warnings: string[] = [];
  const conversations: ShareGptTurn[] = [];
  if (options.systemPrompt !== null) {
    conversations.push({ from: 'system', value: options.systemPrompt ?? toolCallingSystemPrompt(options.tools ?? []) });
  }
  let i = 0;
  while (i < messages.length) {
    const message = messages[i];
    if (message === undefined) break;
    if (message.role === 'user') {
      conversations.push({ from: 'human', value: flattenContent(message.content) });
    } else if (message.role === 'assistant') {
      conversations.push({ from: 'gpt', value: assistantValue(message, i, warnings) });
    } else if (message.role === 'tool') {
      const previous = messages[i - 1];
      const calls = toolCallsOf(previous);
      if (calls.length === 0) {
        warnings.push(`message ${i}: tool response without a preceding assistant tool call; names taken from the message`);
      }
      const blocks: string[] = [];
      let j = i;
      for (let m = messages[j]; m?.role === 'tool'; m = messages[++j]) {
        blocks.push(toolResponse(m, calls, blocks.length));
      }
      conversations.push({ from: 'tool', value: blocks.join('\n') });
      i = j;
      continue;
    }
    i += 1;
  }
  return { conversations, warnings };
}
