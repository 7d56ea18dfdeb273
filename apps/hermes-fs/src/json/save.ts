/** `hermes-fs save --json`: A session of state.db written as a /save snapshot in sessions/saved/. */
import { z } from 'zod';
import { errorDocumentOf, octalMode } from './common.js';

export const saveResult = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("save"),
  ok: z.literal(true),
  session: z.string(),
  path: z.string(),
  format: z.enum(["md","json","html"]),
  bytes: z.number().int().min(0),
  mode: octalMode,
  redacted: z.boolean(),
  messages: z.number().int().min(0),
  warnings: z.array(z.string()),
});

export type SaveJson = z.infer<typeof saveResult>;

export const saveDocument = z.union([saveResult, errorDocumentOf('save')]);
