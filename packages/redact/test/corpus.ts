/**
 * The redaction corpus. Every expected output is written out by hand: never derive one from the
 * code under test.
 *
 * Secret-shaped inputs are assembled from pieces (`k('ghp_', body)`, `pemBlock(...)`) so that this
 * file never holds a contiguous string that a repository secret scanner would flag. The pieces are
 * fake; the expected outputs are literal.
 */

/** A fake key: prefix and body joined at runtime. */
export function k(prefix: string, body: string): string {
  return prefix + body;
}

const DASHES = '-----';

/** A PEM header line, `-----BEGIN <label>-----`. */
export function pemHeader(label: string): string {
  return `${DASHES}BEGIN ${label}${DASHES}`;
}

/** A fake PEM block: `-----BEGIN <label>-----`, the body lines, `-----END <label>-----`. */
export function pemBlock(label: string, lines: readonly string[], newline = '\n'): string {
  return [pemHeader(label), ...lines, `${DASHES}END ${label}${DASHES}`].join(newline);
}

/** 36 mixed-case alphanumerics; a mask keeps `A1b2C3`-ish heads and the tail `Q7r8`. */
export const BODY36 = 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

export interface Case {
  readonly name: string;
  readonly input: string;
  readonly expected: string;
}

const JWT_HEADER = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9';
const JWT_PAYLOAD = 'eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ';
const JWT_SIGNATURE = 'SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';

/**
 * Secret shapes. `redactSecrets` must turn `input` into `expected`; none of these inputs holds an
 * e-mail address or a phone number, so `redactPrivacy` must produce the same `expected`.
 */
export const SECRET_CASES: readonly Case[] = [
  // Vendor key prefixes.
  {
    name: 'OpenAI project key in an export',
    input: `export OPENAI_API_KEY=${k('sk-proj-', BODY36)}`,
    expected: 'export OPENAI_API_KEY=sk-pro...Q7r8',
  },
  {
    name: 'Anthropic key in YAML',
    input: `anthropic_key: ${k('sk-ant-api03-', BODY36)}`,
    expected: 'anthropic_key: sk-ant...Q7r8',
  },
  { name: 'generic sk- key in prose', input: `use ${k('sk-', BODY36)} for now`, expected: 'use sk-A1b...Q7r8 for now' },
  { name: 'short sk- key is masked in full', input: `use ${k('sk-', 'abcDEF1234')} here`, expected: 'use *** here' },
  { name: 'GitHub classic PAT', input: `token ${k('ghp_', BODY36)}`, expected: 'token ghp_A1...Q7r8' },
  { name: 'GitHub OAuth token', input: `"access_token":"${k('gho_', BODY36)}"`, expected: '"access_token":"gho_A1...Q7r8"' },
  { name: 'GitHub user-to-server token', input: k('ghu_', BODY36), expected: 'ghu_A1...Q7r8' },
  { name: 'GitHub server-to-server token', input: `(${k('ghs_', BODY36)})`, expected: '(ghs_A1...Q7r8)' },
  { name: 'GitHub refresh token', input: `refresh=${k('ghr_', BODY36)}`, expected: 'refresh=ghr_A1...Q7r8' },
  {
    name: 'GitHub fine-grained PAT',
    input: `GH_PAT is ${k('github_pat_', `11AAAAAAA0_${BODY36}`)}.`,
    expected: 'GH_PAT is github...Q7r8.',
  },
  { name: 'GitLab PAT', input: `PRIVATE_TOKEN_VALUE ${k('glpat-', 'xY9zW8vU7tS6rQ5pO4nM')}`, expected: 'PRIVATE_TOKEN_VALUE glpat-...O4nM' },
  {
    name: 'Slack bot token',
    input: `SLACK ${k('xoxb-', '1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx')}`,
    expected: 'SLACK xoxb-1...UvWx',
  },
  { name: 'Slack user token', input: k('xoxp-', '2468013579-ABCdef123456'), expected: 'xoxp-2...3456' },
  { name: 'Slack app token (xoxa-)', input: k('xoxa-', '2-AbC123dEf456'), expected: 'xoxa-2...f456' },
  { name: 'short Slack refresh token is masked in full', input: k('xoxr-', 'Ab12Cd34Ef'), expected: '***' },
  { name: 'Slack xoxs- token', input: k('xoxs-', '1111-2222-AbCdEf'), expected: 'xoxs-1...CdEf' },
  { name: 'Slack app-level token', input: k('xapp-', '1-A01BCD23EF4-56789abcdef'), expected: 'xapp-1...cdef' },
  { name: 'Google API key', input: `key=${k('AIza', BODY36)}&q=x`, expected: 'key=AIzaA1...Q7r8&q=x' },
  { name: 'Google OAuth access token', input: k('ya29.', BODY36), expected: 'ya29.A...Q7r8' },
  {
    name: 'AWS access key id',
    input: `aws_access_key_id = ${k('AKIA', 'IOSFODNN7EXAMPLE')}`,
    expected: 'aws_access_key_id = AKIAIO...MPLE',
  },
  { name: 'AWS temporary access key id', input: k('ASIA', 'Y34FZKBOKMUTVV7A'), expected: 'ASIAY3...VV7A' },
  { name: 'Hugging Face token', input: `HF: ${k('hf_', 'AbCdEfGhIjKlMnOpQrStUvWxYz012345')}`, expected: 'HF: hf_AbC...2345' },
  { name: 'npm token in .npmrc', input: `//registry.npmjs.org/:_authToken=${k('npm_', BODY36)}`, expected: '//registry.npmjs.org/:_authToken=npm_A1...Q7r8' },
  { name: 'PyPI token', input: `password = ${k('pypi-', 'AgEIcHlwaS5vcmcCJDEyMzQ1Njc4')}`, expected: 'password = pypi-A...Njc4' },
  { name: 'Stripe live secret key', input: k('sk_live_', '51H8abcDEF0123456789ghiJKL'), expected: 'sk_liv...iJKL' },
  { name: 'Stripe restricted key', input: k('rk_live_', 'Zz9Yy8Xx7Ww6'), expected: 'rk_liv...7Ww6' },
  { name: 'Stripe test key', input: k('sk_test_', 'Abc123Def456'), expected: 'sk_tes...f456' },
  {
    name: 'SendGrid key (both segments)',
    input: k('SG.', 'aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01a'),
    expected: 'SG.aBc...Z01a',
  },
  { name: 'DigitalOcean PAT', input: k('dop_v1_', '0123456789abcdef'.repeat(4)), expected: 'dop_v1...cdef' },
  { name: 'Shopify admin token', input: k('shpat_', '0123456789abcdef0123456789abcdef'), expected: 'shpat_...cdef' },
  { name: 'Replicate token', input: k('r8_', 'AbCdEfGhIj0123456789KlMnOpQrSt'), expected: 'r8_AbC...QrSt' },
  { name: 'Groq key', input: k('gsk_', 'aBc1'.repeat(13)), expected: 'gsk_aB...aBc1' },
  {
    name: 'Perplexity key',
    input: k('pplx-', 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4'),
    expected: 'pplx-a...w3X4',
  },
  { name: 'Fireworks key', input: k('fw_', '3ZabcDEF1234ghiJKL5678mnoPQR'), expected: 'fw_3Za...oPQR' },
  { name: 'xAI key', input: k('xai-', BODY36), expected: 'xai-A1...Q7r8' },
  { name: 'Tavily dev key', input: k('tvly-', 'dev-AbCdEf123456'), expected: 'tvly-d...3456' },
  { name: 'HashiCorp Vault token', input: `VAULT ${k('hvs.', 'CAESIJabcdEFGH1234ijklMNOP')}`, expected: 'VAULT hvs.CA...MNOP' },
  { name: 'Docker Hub PAT', input: k('dckr_pat_', 'Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9'), expected: 'dckr_p...8Qr9' },
  {
    name: 'age secret key',
    input: k('AGE-SECRET-KEY-1', 'QABCDEFGHJKLMNPQRSTUVWXYZ0123456789ABCDEFGHJKLMNPQRSTUVWXYZ'),
    expected: 'AGE-SE...WXYZ',
  },
  {
    name: 'key right after a JSON-escaped newline',
    input: `{"text":"token:\\n${k('ghp_', BODY36)}"}`,
    expected: '{"text":"token:\\nghp_A1...Q7r8"}',
  },
  {
    name: 'Telegram bot token in an API URL',
    input: `GET https://api.telegram.org/bot123456789:${k('AAHdqTcvCH1v', 'GWJxfSeofSAs0K5PALDsaw')}/getMe`,
    expected: 'GET https://api.telegram.org/bot123456789:***/getMe',
  },

  // JWTs.
  {
    name: 'signed JWT in a cookie',
    input: `set-cookie: session=${JWT_HEADER}.${JWT_PAYLOAD}.${JWT_SIGNATURE}; Path=/`,
    expected: 'set-cookie: session=eyJhbG...sw5c; Path=/',
  },
  {
    name: 'unsigned JWT (header.payload.)',
    input: 'id_token eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.',
    expected: 'id_token eyJhbG...biJ9.',
  },

  // Credential headers.
  {
    name: 'Authorization: Bearer opaque token',
    input: 'Authorization: Bearer AbCdEf0123456789GhIjKl',
    expected: 'Authorization: Bearer AbCdEf...IjKl',
  },
  {
    name: 'Authorization: Basic credentials',
    input: 'Authorization: Basic dXNlcjpwYXNzd29yZA==',
    expected: 'Authorization: Basic dXNlcj...ZA==',
  },
  { name: 'short bearer token', input: 'Authorization: Bearer abc123', expected: 'Authorization: Bearer ***' },
  {
    name: 'Authorization with a JWT',
    input: `authorization: Bearer ${JWT_HEADER}.${JWT_PAYLOAD}.${JWT_SIGNATURE}`,
    expected: 'authorization: Bearer eyJhbG...sw5c',
  },
  {
    name: 'JSON headers object',
    input: '{"Authorization": "Bearer AbCdEf0123456789GhIjKl", "Accept": "application/json"}',
    expected: '{"Authorization": "Bearer AbCdEf...IjKl", "Accept": "application/json"}',
  },
  {
    name: 'curl with a GitHub token header',
    input: `curl -H 'authorization: token ${k('ghp_', BODY36)}' https://api.github.com/user`,
    expected: "curl -H 'authorization: token ghp_A1...Q7r8' https://api.github.com/user",
  },
  {
    name: 'Proxy-Authorization header',
    input: 'Proxy-Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l',
    expected: 'Proxy-Authorization: Basic YWxhZG...YW1l',
  },
  {
    name: 'escaped JSON inside JSON',
    input: '{"body":"{\\"authorization\\":\\"Bearer AbCdEf0123456789GhIjKl\\"}"}',
    expected: '{"body":"{\\"authorization\\":\\"Bearer AbCdEf...IjKl\\"}"}',
  },
  {
    name: 'Python headers dict',
    input: "headers={'Authorization': 'Bearer AbCdEf0123456789GhIjKl'}",
    expected: "headers={'Authorization': 'Bearer AbCdEf...IjKl'}",
  },
  { name: 'x-api-key header', input: 'x-api-key: 0123456789abcdef0123', expected: 'x-api-key: 012345...0123' },
  { name: 'x-api-key in JSON, short value', input: '"x-api-key": "AbC123"', expected: '"x-api-key": "***"' },
  {
    name: 'X-Auth-Token header with a UUID',
    input: 'X-Auth-Token: 7f3c9a1e-5b2d-4e8f-9a6c-0d1e2f3a4b5c',
    expected: 'X-Auth-Token: 7f3c9a...4b5c',
  },
  {
    name: 'PRIVATE-TOKEN header',
    input: 'curl --header "PRIVATE-TOKEN: Xy12Zw34Vu56Ts78" https://gitlab.example.com/api/v4/projects',
    expected: 'curl --header "PRIVATE-TOKEN: ***" https://gitlab.example.com/api/v4/projects',
  },

  // URL credentials.
  {
    name: 'Postgres URL password',
    input: 'DATABASE_URL=postgres://app:s3cr3t-Passw0rd@db.internal:5432/app',
    expected: 'DATABASE_URL=postgres://app:***@db.internal:5432/app',
  },
  {
    name: 'MongoDB SRV URL password',
    input: 'mongodb+srv://admin:hunter2@cluster0.example.mongodb.net/?retryWrites=true',
    expected: 'mongodb+srv://admin:***@cluster0.example.mongodb.net/?retryWrites=true',
  },
  { name: 'Redis URL with an empty user', input: 'redis://:p4ssw0rd@cache:6379/0', expected: 'redis://:***@cache:6379/0' },
  {
    name: 'https URL with user and password',
    input: 'git clone https://deploy:tok3n@example.com/repo.git',
    expected: 'git clone https://deploy:***@example.com/repo.git',
  },
  {
    name: 'JDBC URL password',
    input: 'jdbc:mysql://root:Sup3r!Secret@10.0.0.5:3306/shop',
    expected: 'jdbc:mysql://root:***@10.0.0.5:3306/shop',
  },
  {
    name: 'bare token as URL user',
    input: 'git remote set-url origin https://a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0@github.com/org/repo.git',
    expected: 'git remote set-url origin https://a1b2c3...a9b0@github.com/org/repo.git',
  },

  // Private keys.
  {
    name: 'RSA private key block',
    input: `key:\n${pemBlock('RSA PRIVATE KEY', ['MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun', 'VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK'])}\nend`,
    expected: 'key:\n[REDACTED PRIVATE KEY]\nend',
  },
  {
    name: 'OpenSSH private key block',
    input: pemBlock('OPENSSH PRIVATE KEY', ['b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW', 'QyNTUxOQAAACDvjFAVB7pnCRgWc3R0cmFuZ2Vfa2V5X2ZvcgAAAAtzc2gtZWQyNTUxOQ==']),
    expected: '[REDACTED PRIVATE KEY]',
  },
  {
    name: 'EC private key inside a JSON string',
    input: `{"key":"${pemBlock('EC PRIVATE KEY', ['MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oAoGCCqGSM49', 'AwEHoUQDQgAE'], '\\n')}\\n"}`,
    expected: '{"key":"[REDACTED PRIVATE KEY]\\n"}',
  },
  {
    name: 'encrypted PKCS#8 key with CRLF line ends',
    input: `a\r\n${pemBlock('ENCRYPTED PRIVATE KEY', ['MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI', 'c2FsdHNhbHQCAggAMAwGCCqGSIb3DQIJBQAwFAYIKoZIhvcN'], '\r\n')}\r\nb`,
    expected: 'a\r\n[REDACTED PRIVATE KEY]\r\nb',
  },
  {
    name: 'PGP private key block',
    input: pemBlock('PGP PRIVATE KEY BLOCK', ['', 'lQOYBGVxc2sBCAC7m1ZrYXl3b3JkcGdwa2V5', '=AbCd']),
    expected: '[REDACTED PRIVATE KEY]',
  },
  {
    name: 'truncated private key (no END line)',
    input: `${pemHeader('PRIVATE KEY')}\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n[truncated]`,
    expected: '[REDACTED PRIVATE KEY]\n[truncated]',
  },

  // Environment-style assignments.
  { name: 'database password assignment', input: 'DB_PASSWORD=hunter2', expected: 'DB_PASSWORD=***' },
  {
    name: 'quoted signing secret',
    input: 'export SLACK_SIGNING_SECRET="8f14e45fceea167a5a36dedd4bea2543"',
    expected: 'export SLACK_SIGNING_SECRET="8f14e4...2543"',
  },
  {
    name: 'AWS secret access key',
    input: 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    expected: 'AWS_SECRET_ACCESS_KEY=wJalrX...EKEY',
  },
  {
    name: 'docker-compose environment entry',
    input: 'services:\n  db:\n    environment:\n      - POSTGRES_PASSWORD=example\n',
    expected: 'services:\n  db:\n    environment:\n      - POSTGRES_PASSWORD=***\n',
  },
  {
    name: 'secret literal assigned in code',
    input: "SECRET_KEY = 'django-insecure-9x!k2@abc'",
    expected: "SECRET_KEY = 'django...@abc'",
  },

  // Keys glued to a word by `-` or `_`: a proxy or wrapper prefixes the key with its own name.
  {
    name: 'OpenAI key behind a proxy prefix, in a model field',
    input: `{"model": "proxy-${k('sk-proj-', BODY36)}", "messages": []}`,
    expected: '{"model": "proxy-sk-pro...Q7r8", "messages": []}',
  },
  { name: 'GitHub token glued with an underscore', input: `token x_${k('ghp_', BODY36)} used`, expected: 'token x_ghp_A1...Q7r8 used' },
  { name: 'Anthropic key glued with a hyphen', input: `litellm/anthropic-${k('sk-ant-api03-', BODY36)}`, expected: 'litellm/anthropic-sk-ant...Q7r8' },
  { name: 'AWS access key id glued with an underscore', input: `AWS_KEY_ID=prod_${k('AKIA', 'IOSFODNN7EXAMPLE')}`, expected: 'AWS_KEY_ID=prod_AKIAIO...MPLE' },
  { name: 'Hugging Face token glued with a hyphen', input: `HF: my-${k('hf_', 'aBcDeFgHiJkLmNoPqRsTuV12')}`, expected: 'HF: my-hf_aBc...uV12' },
  { name: 'Slack token glued with an underscore in a URL path', input: `/hooks/team_${k('xoxb-', '1234567890-1234567890123-AbCdEfGhIjKlMnOp')}`, expected: '/hooks/team_xoxb-1...MnOp' },

  // Several shapes on one line.
  {
    name: 'log line with several secrets',
    input: `POST /v1/chat key=${k('sk-', BODY36)} auth="Bearer ${k('ghp_', BODY36)}" db=redis://:pw123@r:6379`,
    expected: 'POST /v1/chat key=sk-A1b...Q7r8 auth="Bearer ghp_A1...Q7r8" db=redis://:***@r:6379',
  },
];

/**
 * Personal contact data. `redactPrivacy` must turn `input` into `expected`; `redactSecrets` must leave
 * `input` alone unless `secretsExpected` says otherwise.
 */
export const PRIVACY_CASES: readonly (Case & { readonly secretsExpected?: string })[] = [
  { name: 'plain e-mail', input: 'Contact: jane.doe@example.com', expected: 'Contact: [redacted email]' },
  {
    name: 'co-author trailer',
    input: 'Co-authored-by: Jane Doe <jane.doe+git@users.noreply.github.com>',
    expected: 'Co-authored-by: Jane Doe <[redacted email]>',
  },
  { name: 'mailto link', input: 'mailto:ops@example.co.uk?subject=hi', expected: 'mailto:[redacted email]?subject=hi' },
  { name: 'upper-case address at sentence end', input: 'Write to SUPPORT@EXAMPLE.ORG.', expected: 'Write to [redacted email].' },
  {
    name: 'address with underscores and hyphens',
    input: 'from: first_last@mail-server.example-corp.com',
    expected: 'from: [redacted email]',
  },
  { name: 'address in angle brackets in a log', input: 'user=<bob@example.net> logged in', expected: 'user=<[redacted email]> logged in' },
  {
    name: 'two addresses',
    input: 'cc alice@example.com, bob@example.org',
    expected: 'cc [redacted email], [redacted email]',
  },
  { name: 'phone with area code in parentheses', input: 'Call me at (555) 123-4567.', expected: 'Call me at [redacted phone].' },
  { name: 'phone without the space', input: 'tel (555)123-4567', expected: 'tel [redacted phone]' },
  { name: 'hyphenated phone', input: 'phone: 555-123-4567', expected: 'phone: [redacted phone]' },
  { name: 'dotted phone', input: 'phone: 555.123.4567', expected: 'phone: [redacted phone]' },
  { name: '+1 with spaces', input: 'reach me on +1 555 123 4567 today', expected: 'reach me on [redacted phone] today' },
  { name: '+1 with hyphens', input: '+1-555-123-4567', expected: '[redacted phone]' },
  { name: '+1 with a parenthesised area code', input: 'US: +1 (555) 123-4567', expected: 'US: [redacted phone]' },
  { name: 'compact +1 number', input: 'sms +15551234567', expected: 'sms [redacted phone]' },
  { name: 'toll-free 1- prefix', input: 'Call 1-800-555-0199 now', expected: 'Call [redacted phone] now' },
  { name: 'tel: URI', input: '<a href="tel:+1-555-123-4567">', expected: '<a href="tel:[redacted phone]">' },
  { name: 'phone in JSON', input: '{"phone": "555-123-4567"}', expected: '{"phone": "[redacted phone]"}' },
  {
    name: 'phone on its own line',
    input: 'Name: Sam\n555-123-4567\nCity: Springfield',
    expected: 'Name: Sam\n[redacted phone]\nCity: Springfield',
  },
  {
    name: 'e-mail and secret together',
    input: `from alice@example.com with key ${k('sk-', BODY36)}`,
    expected: 'from [redacted email] with key sk-A1b...Q7r8',
    secretsExpected: 'from alice@example.com with key sk-A1b...Q7r8',
  },
  {
    name: 'phone and URL password together',
    input: 'ping (555) 123-4567 then connect to amqp://guest:guest123@mq:5672',
    expected: 'ping [redacted phone] then connect to amqp://guest:***@mq:5672',
    secretsExpected: 'ping (555) 123-4567 then connect to amqp://guest:***@mq:5672',
  },
];

/**
 * Text with no secret and no personal data. Both redactors must return it byte-identical.
 */
export const NEGATIVE_CASES: readonly string[] = [
  'max_tokens=4096',
  'MAX_TOKENS=4096',
  'KEY=4096',
  'TOKEN_LIMIT=8192',
  'PASSWORD_MIN_LENGTH=12',
  'TOKEN_TYPE=bearer',
  'DEBUG=true',
  'export PATH=/usr/local/bin:$PATH',
  'node --max-old-space-size=4096 dist/index.js',
  '{"model":"gpt-4o","max_tokens":4096,"temperature":0.2}',
  '"apiKey": "test-fixture"',
  'api_key = os.environ["OPENAI_API_KEY"]',
  'const token = process.env.GITHUB_TOKEN;',
  'SECRET_KEY = os.getenv("SECRET_KEY")',
  'SECRET_KEY = settings.SECRET_KEY',
  'AUTH_TOKEN=${AUTH_TOKEN:-}',
  'export API_KEY=$(cat ~/.config/key)',
  'GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}',
  'if [ -z "$NPM_TOKEN" ]; then echo "missing"; fi',
  'OPENAI_API_KEY=\nANTHROPIC_API_KEY=\n',
  'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user',
  'curl -H "x-api-key: ${ANTHROPIC_API_KEY}" https://api.anthropic.com/v1/messages',
  'Use the Authorization: header with a Bearer token.',
  'Authorization: Bearer',
  'Bearer tokens expire after 3600 seconds.',
  'The sk- prefix identifies OpenAI keys; never log them.',
  'ghp_ is the prefix for GitHub classic tokens, xoxb- for Slack bots, AKIA for IAM users.',
  'pip install scikit-learn  # sk-learn-compatible-estimators',
  // Look-alikes of keys glued to a word by - or _: identifiers and dates, not generated secrets.
  'model: proxy-sk-learn-compatible-estimators',
  'ds = load_hf_dataset2024("squad")',
  'see x_ghp_readme_for_contributors and my-ghp_notes',
  'tag release-sk-2024-01-01T00:00:00Z was cut',
  'run feature_npm_install12345678 in CI',
  'the disk-sk-volume-01 and task_hf_Transformer2 jobs',
  'cache key build-xoxb-client-v2 expired',
  'JWT headers start with eyJ because {" encodes to it.',
  'payload eyJuYW1lIjoiaGVybWVzIn0= is base64 JSON',
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'a1b2c3d fix: handle the sk- prefix in the parser',
  'commit 9fceb02d0ae598e95dc970b74767f19372d61af8',
  'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  'request 550e8400-e29b-41d4-a716-446655440000 failed',
  'https://example.com/search?q=tokens&page=2',
  'https://github.com/org/repo/pull/123#discussion_r456',
  'See [the docs](https://docs.example.com/auth#tokens).',
  'http://localhost:5173/@vite/client',
  'https://registry.npmjs.org/@hermes%2fredact/-/redact-0.1.0.tgz',
  'postgres://localhost:5432/app',
  'postgresql://{user}:{password}@{host}/{db}',
  'ssh://git@github.com/org/repo.git',
  'git@github.com:org/repo.git',
  'Bump typescript from 5.8.3 to 5.9.2',
  'npm install react@18.2.0 @types/node@20.19.0',
  '@app.route("/login", methods=["POST"])',
  'deadline 2026-11-30 at 12:30:45',
  'started 2026-11-30T12:30:45.123Z, took 12:30:45.123',
  'listening on 192.168.1.100:8080 and 10.0.0.1',
  'bind [::1]:3000 and 2001:db8:85a3::8a2e:370:7334',
  'Error: connect ECONNREFUSED 127.0.0.1:5432',
  '    at Object.<anonymous> (/app/src/index.ts:42:17)\n    at Module._compile (node:internal/modules/cjs/loader:1554:14)',
  '  File "/usr/lib/python3.12/site-packages/requests/api.py", line 59, in request',
  '\tat com.example.AuthService.login(AuthService.java:123)',
  '@@ -12,7 +12,8 @@ def handler(event):',
  'Order #5551234567 shipped; timestamp 1732960245123',
  'ISBN 978-3-16-148410-0',
  'Temperature: 0.7, top_p: 0.95, seed: 5551234567',
  'const timeout = 555 * 1000; // 555-1234 is not a full number',
  '2026-11-30T12:30:45Z INFO request_id=7f3c9a1e took 123ms status=200',
  'color: #ff5733; margin: 0 auto;',
  'SELECT * FROM users WHERE id = 42 AND token_hash = $1;',
  'retries: 3\ntimeout: 30s\nmodel: claude-3-5-sonnet',
  'The password must be at least 12 characters.',
  'Set-Cookie: theme=dark; Path=/; SameSite=Lax',
  'kind: Secret\nmetadata:\n  name: api-token',
  'type Config struct {\n\tAPIKey string `json:"api_key,omitempty"`\n}',
  '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUK3sN\n-----END CERTIFICATE-----',
  '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----',
  '00000010: 0200 3e00 0100 0000 c005 4000 0000 0000  ..>.......@.....',
  'Loading... done. Masked values look like *** in the UI.',
  'diff --git a/src/auth.ts b/src/auth.ts\n-  const key = loadKey();\n+  const key = await loadKey();',
  '$ ls -la\ntotal 16\ndrwx------  4 user  staff   128 Nov 30 12:30 .\n-rw-------  1 user  staff  4096 Nov 30 12:30 config.yaml',
  'v1.2.3-rc.1+build.20261130',
];
