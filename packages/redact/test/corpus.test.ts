import { describe, expect, it } from 'vitest';
import { redactPrivacy, redactSecrets } from '../src/index.js';
import { NEGATIVE_CASES, PRIVACY_CASES, SECRET_CASES } from './corpus.js';

describe('corpus size', () => {
  it('has at least 60 positive and 60 negative cases', () => {
    expect(SECRET_CASES.length + PRIVACY_CASES.length).toBeGreaterThanOrEqual(60);
    expect(NEGATIVE_CASES.length).toBeGreaterThanOrEqual(60);
  });
});

describe('redactSecrets: secret shapes', () => {
  it.each(SECRET_CASES)('$name', ({ input, expected }) => {
    expect(redactSecrets(input)).toBe(expected);
  });
});

describe('redactPrivacy: secret shapes are masked the same way', () => {
  it.each(SECRET_CASES)('$name', ({ input, expected }) => {
    expect(redactPrivacy(input)).toBe(expected);
  });
});

describe('redactPrivacy: contact data', () => {
  it.each(PRIVACY_CASES)('$name', ({ input, expected }) => {
    expect(redactPrivacy(input)).toBe(expected);
  });
});

describe('redactSecrets leaves contact data alone', () => {
  it.each(PRIVACY_CASES)('$name', ({ input, secretsExpected }) => {
    expect(redactSecrets(input)).toBe(secretsExpected ?? input);
  });
});

describe('text without secrets or personal data is returned byte-identical', () => {
  it.each(NEGATIVE_CASES.map((text) => [text]))('%j', (text) => {
    expect(redactSecrets(text)).toBe(text);
    expect(redactPrivacy(text)).toBe(text);
  });

  it('holds for the whole negative corpus joined into one document', () => {
    const document = NEGATIVE_CASES.join('\n');
    expect(redactSecrets(document)).toBe(document);
    expect(redactPrivacy(document)).toBe(document);
  });
});

describe('idempotence on the corpus', () => {
  const inputs = [
    ...SECRET_CASES.map((c) => c.input),
    ...PRIVACY_CASES.map((c) => c.input),
    ...NEGATIVE_CASES,
  ];

  it.each(inputs.map((text) => [text]))('%j', (text) => {
    const secrets = redactSecrets(text);
    expect(redactSecrets(secrets)).toBe(secrets);
    const privacy = redactPrivacy(text);
    expect(redactPrivacy(privacy)).toBe(privacy);
  });

  it('holds for every expected output, redacted again', () => {
    for (const { expected } of [...SECRET_CASES, ...PRIVACY_CASES]) {
      expect(redactPrivacy(expected)).toBe(expected);
    }
    for (const { expected } of SECRET_CASES) {
      expect(redactSecrets(expected)).toBe(expected);
    }
  });
});
