/** The HTTP adapter (fastify): the webhook-shaped API, probes, metrics and the page. */
import * as fs from 'node:fs';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { GatewayCore, PostResult } from './core.js';
import { keyProblem, MAX_IDEMPOTENCY_KEY_LENGTH } from './ids.js';

/** Largest request body accepted (bytes): a larger one is 413. */
export const DEFAULT_BODY_LIMIT = 64 * 1024;
/** Largest message text (UTF-16 units): a longer one is 413. */
export const MAX_TEXT_LENGTH = 32 * 1024;

const PUBLIC_DIR = new URL('../public/', import.meta.url);
const STATIC: Readonly<Record<string, string>> = { '/': 'index.html', '/app.js': 'app.js' };
const TYPES: Readonly<Record<string, string>> = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8' };

class HttpProblem extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function problem(reply: FastifyReply, status: number, code: string, message: string, extra: Record<string, unknown> = {}): FastifyReply {
  return reply.code(status).send({ error: { code, message, ...extra } });
}

function sessionKeyOf(params: unknown): string {
  const key = (params as { key?: unknown }).key;
  const text = typeof key === 'string' ? key : '';
  const why = keyProblem(text);
  if (why !== undefined) throw new HttpProblem(400, 'EINVALID_KEY', why);
  return text;
}

/** The message body: a JSON object with a non-empty string `text`; anything else is named in a 4xx. */
function textOf(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpProblem(400, 'EINVALID_BODY', 'the body must be a JSON object like {"text": "hello"}');
  }
  const text = (body as { text?: unknown }).text;
  if (text === undefined) throw new HttpProblem(400, 'EMISSING_TEXT', 'the body has no "text" field');
  if (typeof text !== 'string') throw new HttpProblem(400, 'EINVALID_TEXT', `"text" must be a string, not ${text === null ? 'null' : typeof text}`);
  if (text.trim() === '') throw new HttpProblem(400, 'EEMPTY_TEXT', '"text" is empty');
  if (text.length > MAX_TEXT_LENGTH) throw new HttpProblem(413, 'ETEXT_TOO_LONG', `"text" is ${String(text.length)} characters long (at most ${String(MAX_TEXT_LENGTH)})`);
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text)) {
    throw new HttpProblem(400, 'EINVALID_TEXT', '"text" holds an unpaired surrogate (not valid Unicode)');
  }
  return text;
}

function idempotencyKeyOf(header: unknown): string | undefined {
  if (header === undefined) return undefined;
  const text = typeof header === 'string' ? header : undefined;
  const why = text === undefined ? 'the Idempotency-Key header is given more than once' : keyProblem(text, 'Idempotency-Key', MAX_IDEMPOTENCY_KEY_LENGTH);
  if (why !== undefined) throw new HttpProblem(400, 'EINVALID_IDEMPOTENCY_KEY', why);
  return text;
}

function statusOf(r: PostResult): number {
  if (r.replayed) return 200;
  return r.status === 'spooled' ? 202 : 201;
}

/** Builds the fastify app over `core` (not listening yet). */
export function buildHttp(core: GatewayCore, options: { bodyLimit?: number } = {}): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT, return503OnClosing: true, forceCloseConnections: false, maxParamLength: 4096 });
  const pages = new Map(Object.entries(STATIC).map(([route, file]) => [route, { file, body: fs.readFileSync(new URL(file, PUBLIC_DIR)) }]));

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, _req, reply) => {
    core.metrics.refused++;
    const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    const code = err.code ?? (status === 500 ? 'EINTERNAL' : 'EREQUEST');
    if (status >= 500) core.logger.error(`request failed: ${err.message}`, { code, status });
    const hint = (err as { hint?: unknown }).hint;
    return problem(reply, status, code, err.message, typeof hint === 'string' ? { hint } : {});
  });
  app.setNotFoundHandler((req, reply) => {
    core.metrics.refused++;
    return problem(reply, 404, 'ENOT_FOUND', `no route ${req.method} ${req.url.split('?')[0] ?? ''}`);
  });
  app.addHook('onRequest', async (req, reply) => {
    if (core.phase === 'draining' && req.url !== '/healthz' && req.url !== '/metrics') {
      core.metrics.refused++;
      reply.header('connection', 'close');
      await problem(reply, 503, 'ESTOPPING', 'the gateway is stopping; retry against its next instance');
    }
  });

  for (const [route, page] of pages) {
    app.get(route, (_req, reply) => reply.type(TYPES[page.file.split('.').pop() ?? ''] ?? 'application/octet-stream').send(page.body));
  }
  app.get('/healthz', () => ({ ok: true, phase: core.phase }));
  app.get('/readyz', (_req, reply) =>
    core.phase === 'ready' ? { ready: true } : reply.code(503).send({ ready: false, phase: core.phase }),
  );
  app.get('/metrics', (_req, reply) => reply.type('text/plain; version=0.0.4; charset=utf-8').send(core.metricsText()));

  app.post('/v1/sessions/:key/messages', async (req, reply) => {
    const key = sessionKeyOf(req.params);
    const text = textOf(req.body);
    const idem = idempotencyKeyOf(req.headers['idempotency-key']);
    if (core.phase !== 'ready') return problem(reply, 503, 'ENOT_READY', `the gateway is ${core.phase}; retry shortly`);
    const r = await core.post(key, text, idem);
    return reply.code(statusOf(r)).send(r);
  });
  app.get('/v1/sessions/:key', (req, reply) => {
    const key = sessionKeyOf(req.params);
    const t = core.transcript(key);
    return t ?? problem(reply, 404, 'ENO_SESSION', `no session with key ${JSON.stringify(key)} in state.db`);
  });
  app.post('/v1/sessions/:key/save', async (req, reply) => {
    const key = sessionKeyOf(req.params);
    const format = (req.query as { format?: unknown }).format ?? (req.body as { format?: unknown } | undefined)?.format ?? 'json';
    if (format !== 'json' && format !== 'md' && format !== 'html') {
      return problem(reply, 400, 'EINVALID_FORMAT', `format must be json, md or html, not ${JSON.stringify(format)}`);
    }
    const saved = await core.save(key, format);
    if (saved === undefined) return problem(reply, 404, 'ENO_SESSION', `no session with key ${JSON.stringify(key)} in state.db`);
    const type = format === 'json' ? 'application/json' : format === 'md' ? 'text/markdown' : 'text/html';
    return reply
      .type(`${type}; charset=utf-8`)
      .header('content-disposition', `attachment; filename="${saved.fileName}"`)
      .header('x-hermes-saved-path', saved.path)
      .send(saved.text);
  });
  app.post('/v1/sessions/:key/end', async (req, reply) => {
    const key = sessionKeyOf(req.params);
    const ended = await core.end(key);
    return ended ?? problem(reply, 404, 'ENO_SESSION', `no session with key ${JSON.stringify(key)} in state.db`);
  });
  return app;
}
