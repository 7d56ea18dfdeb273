/**
 * What every `--json` document shares: the error document, four-digit octal modes, and the compile-time check
 * that a type the code prints conforms to its schema (see conformance.ts).
 */
import { z } from 'zod';

/** A permission mode as four octal digits (`"0700"`, `"2770"`). */
export const octalMode = z.string().regex(/^[0-7]{4}$/);

/** The exit codes a failed command ends with (README: exit codes). */
export const failureExitCode = z.literal([1, 2]);

/** The `error` member of an error document. */
export const errorBody = z.strictObject({
  code: z
    .string()
    .regex(/^[A-Z][A-Z0-9_]*$/)
    .describe(
      "An errno (ENOENT, EACCES, ENOTDIR, …) or one of hermes-fs's codes: EUSAGE (bad arguments), ENODB (no state.db), ENOTFOUND / EAMBIGUOUS (no / several spool files match an id), ENOTSNAPSHOT, EROOT_OWNED (would create a root-owned file in a managed home), ENOSESSION, EINTERNAL.",
    ),
  message: z.string().describe('One line, exact (not escaped for a terminal).'),
  path: z.string().nullable().describe('The path the error is about, when there is one.'),
  hint: z.string().nullable().describe('What to do about it.'),
});

const ERROR_DESCRIPTION =
  'The command failed: exit code 2 (it could not run: usage, a missing or unusable home, a missing state.db, an unexpected error) or 1 (it ran, and a save/export failed). Also the end of a `pending list` stream that failed half-way (its entries before `ok`).';

/** The error document of any command (`command` is any string). */
export const errorDocumentSchema = z
  .object({
    schemaVersion: z.literal(1),
    command: z.string(),
    ok: z.literal(false),
    exitCode: failureExitCode,
    error: errorBody,
  })
  .describe(ERROR_DESCRIPTION);

/** The error document of one command: `command` is that command's name. */
export function errorDocumentOf<C extends string>(command: C) {
  return z
    .object({
      schemaVersion: z.literal(1),
      command: z.literal(command),
      ok: z.literal(false),
      exitCode: failureExitCode,
      error: errorBody,
    })
    .describe(ERROR_DESCRIPTION);
}

export type ErrorDocumentJson = z.infer<typeof errorDocumentSchema>;

type KeysOf<T> = T extends unknown ? keyof T : never;
type PropOf<T, K extends PropertyKey> = T extends unknown ? (K extends keyof T ? T[K] : never) : never;
type DeepReadonly<T> = T extends readonly (infer E)[] ? readonly DeepReadonly<E>[] : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

/** The keys (deeply) of `C` that its schema type `S` does not have; `never` when there are none. */
export type ExtraKeys<C, S> = C extends readonly (infer CE)[]
  ? ExtraKeys<CE, Extract<S, readonly unknown[]> extends readonly (infer SE)[] ? SE : never>
  : C extends object
    ? { [K in keyof C]-?: K extends KeysOf<Extract<S, object>> ? ExtraKeys<C[K], PropOf<Extract<S, object>, K>> : K }[keyof C]
    : never;

/**
 * True when the code's type `C` conforms to the schema's type `S`: every value of `C` is a value of `S`, and `C`
 * has no member (at any depth) the schema does not describe. Otherwise an object naming what is wrong, which
 * fails {@link assertConforms}.
 */
export type Conforms<C, S> = [C] extends [DeepReadonly<S>]
  ? [ExtraKeys<C, S>] extends [never]
    ? true
    : { readonly notInSchema: ExtraKeys<C, S> }
  : { readonly notAssignableToSchema: C };

/** A compile-time assertion: `tsc` fails unless `T` is `true`. */
export type AssertConforms<T extends true> = T;
