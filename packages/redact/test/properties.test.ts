import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redactPrivacy, redactSecrets } from '../src/index.js';

/**
 * Pieces of every shape the redactors look for, and of the masks they produce, so that random
 * concatenations hit the places where one pattern's output meets another's input.
 */
const FRAGMENTS = [
  'sk-', 'sk-proj-', 'sk_live_', 'ghp_', 'github_pat_', 'glpat-', 'glrtr-', 'xoxb-', 'xapp-1-', 'AIza', 'ya29.',
  'AKIA', 'ASIA', 'hf_', 'npm_', 'pypi-', 'SG.', 'hvs.', 'AGE-SECRET-KEY-1', 'eyJ', 'eyJhbGciOiJIUzI1NiJ9',
  'eyJzdWIiOiIxIn0', 'A1b2C3d4E5f6G7h8', 'abcdefghij', 'ABCDEFGHIJKLMNOP', '0123456789', 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
  '-----BEGIN RSA PRIVATE KEY-----', '-----END RSA PRIVATE KEY-----', '-----', 'PRIVATE KEY',
  'Authorization: ', 'Proxy-Authorization:', 'authorization=', '"authorization": "', 'x-api-key: ', 'api-key: ',
  'x-auth-token:', 'private-token=', 'Bearer ', 'Basic ', 'token ', 'Digest ',
  '://', 'postgres://', 'https://', 'redis://:', 'user', 'pass', ':', '@', '/', '?', '#',
  'DB_PASSWORD', 'SECRET', '_TOKEN', '_KEY', 'export ', '=', '="', "'", '"', '`', ' ', '\t', '\n', '\r\n',
  '\\n', '\\u00e9', '\\', '$TOKEN', '${', '$(', '{x}', '<t>', '(', ')', '[', ']', '{', '}', ',', ';', '!', '.', '..',
  '...', '***', 'abcdef...wxyz', '[redacted email]', '[redacted phone]', '[REDACTED PRIVATE KEY]',
  '555', '-', '(555) ', '123-4567', '+1 ', '1-', 'tel:', 'mailto:', 'git@', 'a.b@c.io', 'example.com', '.com', '%', '+',
  'bot', '123456789', '12345678', ':AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0', '==', '#A', 'Z9', '_', 'x', '9.9',
];

const fragmentText = fc
  .array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 3 })), { maxLength: 40 })
  .map((parts) => parts.join(''));

describe('properties', () => {
  it('redactSecrets is idempotent on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const once = redactSecrets(text);
        expect(redactSecrets(once)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });

  it('redactPrivacy is idempotent on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const once = redactPrivacy(text);
        expect(redactPrivacy(once)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });

  it('redactSecrets is idempotent on strings built from pattern fragments', () => {
    fc.assert(
      fc.property(fragmentText, (text) => {
        const once = redactSecrets(text);
        expect(redactSecrets(once)).toBe(once);
      }),
      { numRuns: 5000 },
    );
  });

  it('redactPrivacy is idempotent on strings built from pattern fragments', () => {
    fc.assert(
      fc.property(fragmentText, (text) => {
        const once = redactPrivacy(text);
        expect(redactPrivacy(once)).toBe(once);
      }),
      { numRuns: 5000 },
    );
  });

  it('is deterministic: the same input always gives the same output', () => {
    fc.assert(
      fc.property(fragmentText, (text) => {
        expect(redactPrivacy(text)).toBe(redactPrivacy(text));
        expect(redactSecrets(text)).toBe(redactSecrets(text));
      }),
      { numRuns: 500 },
    );
  });

  it('leaves lower-case prose untouched', () => {
    const prose = fc
      .array(fc.constantFrom(...Array.from('abcdefghijklmnopqrstuvwxyz .,;!?\n')), { maxLength: 300 })
      .map((chars) => chars.join(''));
    fc.assert(
      fc.property(prose, (text) => {
        expect(redactPrivacy(text)).toBe(text);
        expect(redactSecrets(text)).toBe(text);
      }),
      { numRuns: 1000 },
    );
  });
});
