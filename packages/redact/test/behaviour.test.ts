import { describe, expect, it } from 'vitest';
import {
  EMAIL_MASK,
  FULL_MASK,
  PHONE_MASK,
  PRIVATE_KEY_MASK,
  SECRET_KEY_FAMILIES,
  redactPrivacy,
  redactSecrets,
  redactValue,
} from '../src/index.js';
import { BODY36, k } from './corpus.js';

describe('mask forms', () => {
  it('exports the literal placeholders', () => {
    expect(FULL_MASK).toBe('***');
    expect(PRIVATE_KEY_MASK).toBe('[REDACTED PRIVATE KEY]');
    expect(EMAIL_MASK).toBe('[redacted email]');
    expect(PHONE_MASK).toBe('[redacted phone]');
  });

  it('masks a 17-character secret in full and keeps head and tail from 18 characters on', () => {
    expect(redactSecrets('x-api-key: abcdefghijklmnop1')).toBe('x-api-key: ***');
    expect(redactSecrets('x-api-key: abcdefghijklmnopq1')).toBe('x-api-key: abcdef...opq1');
  });

  it('masks URL passwords in full whatever their length', () => {
    expect(redactSecrets('postgres://u:a-very-long-password-indeed-1234567890@h/db')).toBe('postgres://u:***@h/db');
  });

  it('keeps the Telegram bot id and masks only the secret half', () => {
    expect(redactSecrets(`bot987654321:${k('AAF', 'x1y2z3w4v5u6t7s8r9q0p1o2n3m4l5k6j7')}`)).toBe('bot987654321:***');
  });
});

describe('vendor key families', () => {
  it('covers at least 25 families, each with a distinct prefix', () => {
    expect(SECRET_KEY_FAMILIES.length).toBeGreaterThanOrEqual(25);
    const prefixes = new Set(SECRET_KEY_FAMILIES.map((family) => family.prefix));
    expect(prefixes.size).toBe(SECRET_KEY_FAMILIES.length);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(SECRET_KEY_FAMILIES)).toBe(true);
    expect(SECRET_KEY_FAMILIES.every((family) => Object.isFrozen(family))).toBe(true);
  });

  it('masks more vendor prefixes than the corpus lists one by one', () => {
    const samples: readonly (readonly [string, string])[] = [
      [k('whsec_', BODY36), 'whsec_...Q7r8'],
      [k('gldt-', BODY36), 'gldt-A...Q7r8'],
      [k('xoxe-', '1-AbCdEf123456'), 'xoxe-1...3456'],
      [k('doo_v1_', 'ab12'.repeat(10)), 'doo_v1...ab12'],
      [k('shpss_', 'ab12'.repeat(8)), 'shpss_...ab12'],
      [k('fc-', BODY36), 'fc-A1b...Q7r8'],
      [k('csk-', BODY36), 'csk-A1...Q7r8'],
      [k('nvapi-', BODY36), 'nvapi-...Q7r8'],
      [k('ntn_', BODY36), 'ntn_A1...Q7r8'],
      [k('syt_', BODY36), 'syt_A1...Q7r8'],
      [k('lin_api_', BODY36), 'lin_ap...Q7r8'],
      [k('figd_', BODY36), 'figd_A...Q7r8'],
      [k('lsv2_pt_', BODY36), 'lsv2_p...Q7r8'],
      [k('sntrys_', BODY36), 'sntrys...Q7r8'],
      [k('ATATT3', BODY36), 'ATATT3...Q7r8'],
      [k('sq0csp-', BODY36), 'sq0csp...Q7r8'],
      [k('hvb.', BODY36), 'hvb.A1...Q7r8'],
    ];
    for (const [input, expected] of samples) {
      expect(redactSecrets(`[${input}]`)).toBe(`[${expected}]`);
    }
  });

  it('does not mask a prefix inside a longer identifier', () => {
    const text = `my${k('glpat-', BODY36)} x${k('ghp_', BODY36)}`;
    expect(redactSecrets(text)).toBe(text);
  });

  it('does not mask a key that directly follows a dot', () => {
    const text = `config.${k('ya29.', BODY36)}`;
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('values that name a secret instead of holding one', () => {
  it.each([
    'Authorization: Bearer ${TOKEN}',
    'Authorization: Bearer $(gh auth token)',
    'Authorization: Bearer <token>',
    'x-api-key: {api_key}',
    'postgres://app:${PGPASSWORD}@db/app',
    'mysql://root:$MYSQL_ROOT_PASSWORD@db/app',
    'DB_PASSWORD=${DB_PASSWORD}',
    'GITHUB_TOKEN=$GH_TOKEN',
  ])('%s', (text) => {
    expect(redactSecrets(text)).toBe(text);
  });

  it('still masks a password that merely starts with $', () => {
    expect(redactSecrets('postgres://app:$ecretPass1@db/app')).toBe('postgres://app:***@db/app');
  });
});

describe('already-masked text', () => {
  it.each([
    'Authorization: Bearer ***',
    'Authorization: Bearer AbCdEf...IjKl',
    'x-api-key: 012345...0123',
    'postgres://app:***@db/app',
    'DB_PASSWORD=***',
    'API_TOKEN="8f14e4...2543"',
    'token sk-pro...Q7r8',
    '[REDACTED PRIVATE KEY]',
    'mail [redacted email] or [redacted phone]',
  ])('%s is left as it is', (text) => {
    expect(redactSecrets(text)).toBe(text);
    expect(redactPrivacy(text)).toBe(text);
  });
});

describe('assignments', () => {
  it('masks secret-named assignments and leaves settings alone', () => {
    const env = [
      'DEBUG=false',
      'PORT=8080',
      'MAX_TOKENS=4096',
      'DB_PASSWORD=hunter2',
      'DB_PASSWORD=123456',
      'STRIPE_TOKEN=4096',
      'JWT_SECRET=correct-horse-battery-staple',
      'SESSION_SECRET=',
    ].join('\n');
    expect(redactSecrets(env)).toBe(
      [
        'DEBUG=false',
        'PORT=8080',
        'MAX_TOKENS=4096',
        'DB_PASSWORD=***',
        'DB_PASSWORD=***',
        'STRIPE_TOKEN=4096',
        'JWT_SECRET=correc...aple',
        'SESSION_SECRET=',
      ].join('\n'),
    );
  });

  it('treats spaced, unquoted code as code unless the value is clearly opaque', () => {
    expect(redactSecrets('API_TOKEN = build_token(user)')).toBe('API_TOKEN = build_token(user)');
    expect(redactSecrets('API_TOKEN = fallback_value')).toBe('API_TOKEN = fallback_value');
    expect(redactSecrets('API_TOKEN = a8f3k2m9q7w1e5r4t6y0')).toBe('API_TOKEN = a8f3k2...t6y0');
  });

  it('does not mistake comparisons for assignments', () => {
    const text = 'if [ "$X" == "y" ]; then API_TOKEN==abc; fi';
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('README example', () => {
  it('produces the output the README shows', () => {
    const transcript = {
      messages: [
        { role: 'user', content: `deploy with ${k('ghp_', BODY36)} and ping jane@example.com` },
        { role: 'tool', content: 'postgres://app:hunter2@db:5432/app responded in 12ms' },
      ],
    };

    expect(redactValue(transcript, redactSecrets)).toEqual({
      messages: [
        { role: 'user', content: 'deploy with ghp_A1...Q7r8 and ping jane@example.com' },
        { role: 'tool', content: 'postgres://app:***@db:5432/app responded in 12ms' },
      ],
    });
    expect(redactValue(transcript, redactPrivacy)).toEqual({
      messages: [
        { role: 'user', content: 'deploy with ghp_A1...Q7r8 and ping [redacted email]' },
        { role: 'tool', content: 'postgres://app:***@db:5432/app responded in 12ms' },
      ],
    });
  });
});
