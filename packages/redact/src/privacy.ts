import { replaceMatches } from './scan.js';
import { redactAssignments, redactHeaders, redactSecretTokens } from './secrets.js';

export const EMAIL_MASK = '[redacted email]';
export const PHONE_MASK = '[redacted phone]';

/*
 * E-mail addresses. The local part is anchored to the start of its run (lookbehind), so a long run
 * without `@` is scanned once; the domain is one flat class followed by `.tld`, whose backtracking is
 * bounded by the length of the domain run. Left alone on purpose:
 *   - `user@host` in URL userinfo (`ssh://git@github.com/...`), which names an account, not a mailbox;
 *   - scp-style remotes `git@github.com:org/repo.git` (an address directly followed by `:path`);
 *   - an address running straight into more address characters (`a@b.io%c`, `a@b.co...` the head
 *     of a partial secret mask): once the first address is replaced, the rest must not read as a
 *     new one.
 *   - npm specs and decorators (`react@18.2.0`, `@app.route`): no dotted alphabetic TLD.
 */
const EMAIL_RE =
  /(?<![A-Za-z0-9._%+-])(?<!\/\/)[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?![A-Za-z0-9_%+-]|\.[A-Za-z0-9._%+-]|:[^\s])/g;

/**
 * A real address never has two dots in a row, while every partial secret mask (`abcdef...wxyz`)
 * does. Refusing such candidates keeps this pass from reaching into a mask the secret passes
 * produced, which would otherwise let the next run see a different credential and mask it again.
 */
function redactEmail(match: RegExpExecArray): string {
  return match[0].includes('..') ? match[0] : EMAIL_MASK;
}

/*
 * Delimited North American phone numbers: an optional `+1` / `1-` country code, an area code
 * written `(555)` or followed by `-` or `.`, then `ddd-dddd` / `ddd.dddd`. With an explicit `+1` the
 * groups may also be separated by spaces or written together (`+1 555 123 4567`, `+15551234567`).
 * The number may not touch a word character, dot, plus or hyphen on either side (a full stop that
 * ends a sentence is fine) nor run straight into a `(`, so dates, times, versions, IP addresses,
 * SHAs and bare digit runs never match. Every quantifier is bounded.
 */
const PHONE_RE = new RegExp(
  String.raw`(?<![\w.+-])` +
    String.raw`(?:\+1[ .-]?(?:\([0-9]{3}\)|[0-9]{3})[ .-]?[0-9]{3}[ .-]?[0-9]{4}` +
    String.raw`|(?:1-)?(?:\([0-9]{3}\) ?|[0-9]{3}[-.])[0-9]{3}[-.][0-9]{4})` +
    String.raw`(?![\w+(-]|\.[0-9])`,
  'g',
);

/**
 * Redacts secrets (every rule of {@link redactSecrets}) and personal contact data: e-mail
 * addresses become `[redacted email]` and delimited North American phone numbers
 * (`(555) 123-4567`, `555-123-4567`, `555.123.4567`, `+1 555 123 4567`) become `[redacted phone]`.
 *
 * Guarantees:
 * - Deterministic, idempotent (`redactPrivacy(redactPrivacy(x)) === redactPrivacy(x)`) and linear
 *   in `text.length`, whatever the input.
 * - Never touches bare digit runs (`5551234567`, order ids), dates, times, git SHAs, IPv4/IPv6
 *   addresses, semantic versions, line numbers or `KEY=4096` settings: ordinary code-review text
 *   comes back byte-identical.
 * - Every rule of `redactSecrets` applies here too; where a secret and contact data overlap
 *   (`x-api-key: +1 555 123 4567`), the overlap may carry either placeholder.
 */
export function redactPrivacy(text: string): string {
  // Contact data goes after the self-delimiting secret passes and before the assignment and
  // header passes, which then see values exactly as they will be stored: a second run cannot
  // judge them differently (see redactSecretTokens for the ordering argument).
  let out = redactSecretTokens(text);
  if (out.includes('@')) {
    out = replaceMatches(out, EMAIL_RE, redactEmail);
  }
  out = replaceMatches(out, PHONE_RE, () => PHONE_MASK);
  return redactHeaders(redactAssignments(out));
}
