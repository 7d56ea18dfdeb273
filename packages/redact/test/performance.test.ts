import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { redactPrivacy, redactSecrets } from '../src/index.js';

/**
 * Adversarial inputs: 1 MiB strings built to make a backtracking pattern go quadratic or worse
 * (many starts of a pattern whose end never comes, long runs of the characters a pattern repeats,
 * unterminated quotes and blocks). Linear-time redaction finishes each well under the budget.
 */
const MIB = 1 << 20;
const BUDGET_MS = 100;
const RUNS = 5;

/** `head` followed by `unit` repeated, cut to exactly 1 MiB. */
function fill(unit: string, head = ''): string {
  return (head + unit.repeat(Math.ceil(MIB / unit.length))).slice(0, MIB);
}

const ADVERSARIAL: readonly (readonly [string, string])[] = [
  ['sk- prefixes', fill('sk-')],
  ['sk- with a random-looking body', fill('sk-A')],
  ['ghp_ prefixes', fill('ghp_')],
  ['key bodies cut by underscores', fill('ghp_1234567890_')],
  ['prefixes glued to words by hyphens', fill('x-sk-')],
  ['glued prefixes with digits and capitals', fill('a_ghp_A1')],
  ['glue, digit and capital runs', fill('A1-')],
  ['escaped newlines before prefixes', fill('\\nsk-')],
  ['unicode escapes before prefixes', fill('\\u0041sk-')],
  ['AKIA prefixes', fill('AKIA')],
  ['SendGrid segments', fill('SG.aaaaaaaaaaaaaaaaaaaa.')],
  ['a@ pairs', fill('a@')],
  ['a. runs', fill('a.')],
  ['local parts without a domain', fill('a.a@')],
  ['domains without a TLD', fill('a@a.')],
  ['address-like run without @', fill('first.last+tag')],
  ['-----BEGIN runs', fill('-----BEGIN')],
  ['private-key headers without END', fill('-----BEGIN RSA PRIVATE KEY-----\n')],
  ['one header, then a body full of dashes', fill('AAAA-', '-----BEGIN PRIVATE KEY-----\n')],
  ['eyJ and dots', fill('eyJ.')],
  ['JWT headers without payloads', fill('eyJaaaaaaaaaaaa.')],
  ['one endless JWT header', fill('a', 'eyJ')],
  ['JWT-like segments', fill('eyJaaaaaaaaaaaaa.aaaa')],
  [':// and : runs', fill('://:')],
  ['scheme, user, colon', fill('a://a:')],
  ['schemes without userinfo', fill('a://')],
  ['one scheme, endless userinfo', fill('a:', 'a://')],
  ['digit run', fill('5')],
  ['digits and hyphens', fill('555-')],
  ['digits and dots', fill('555.123.')],
  ['area codes', fill('(555) ')],
  ['+1 prefixes', fill('+1 555 ')],
  ['Authorization: names', fill('Authorization: ')],
  ['Authorization: Bearer without tokens', fill('Authorization: Bearer ')],
  ['one Authorization with an endless dotted value', fill('a.', 'Authorization: ')],
  ['x-api-key names', fill('x-api-key: ')],
  ['header values with padding and punctuation', fill('x-api-key: a=.')],
  ['references', fill('x-api-key:${')],
  ['bare assignments', fill('A=')],
  ['unterminated quoted secrets', fill('A_TOKEN="')],
  ['secret assignments', fill('A_TOKEN=')],
  ['upper-case run', fill('A')],
  ['upper-case words', fill('A ')],
  ['bot-id-like runs', fill('123456789:')],
  ['ten-digit runs', fill('1234567890')],
  ['spaces', fill(' ')],
  ['newlines', fill('\n')],
  ['everything at once', fill('sk-a@b.c://d:e@f eyJ.-----BEGIN 555-123-4567 Authorization: x A_TOKEN=" ')],
];

function bestOf(runs: number, fn: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i += 1) {
    const start = performance.now();
    fn();
    best = Math.min(best, performance.now() - start);
  }
  return best;
}

describe(`adversarial 1 MiB inputs finish in under ${BUDGET_MS} ms`, () => {
  it.each(ADVERSARIAL)('%s', (_name, input) => {
    expect(input.length).toBe(MIB);
    const secrets = bestOf(RUNS, () => redactSecrets(input));
    const privacy = bestOf(RUNS, () => redactPrivacy(input));
    expect(secrets).toBeLessThan(BUDGET_MS);
    expect(privacy).toBeLessThan(BUDGET_MS);
  });
});
