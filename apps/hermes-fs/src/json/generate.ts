/** The JSON Schema files of schema/, generated from the zod definitions (`pnpm -C apps/hermes-fs schemas`). */
import { z } from 'zod';
import { DOCUMENT_SCHEMAS, schemaId } from './index.js';

/**
 * Every schema file as it must be on disk: file name → text (draft-07, two-space JSON, newline-terminated).
 * Deterministic: the same definitions always give the same bytes, so a test can compare the committed files.
 */
export function generateSchemaFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const d of DOCUMENT_SCHEMAS) {
    // io "input": z.object() stays open (additional members allowed), z.strictObject() is closed.
    const { $schema, ...body } = z.toJSONSchema(d.schema, { target: 'draft-7', io: 'input', unrepresentable: 'throw' });
    const doc = { $schema, $id: schemaId(d.name), title: d.title, description: d.description, ...body };
    files.set(`${d.name}.schema.json`, `${JSON.stringify(doc, null, 2)}\n`);
  }
  return files;
}
