import { FULL_MASK, isMaskedValue, isReference, maskToken } from './mask.js';
import { replaceMatches } from './scan.js';

/*
 * Linear-time discipline, shared by every pattern below.
 *
 * V8's regex engine backtracks, so each pattern is built so that the work done from one start
 * position is bounded by a run that no other start position scans again:
 *   - a pattern that begins with a run of characters (a URL scheme, an assignment name) is anchored
 *     to the *start* of that run by a lookbehind, so a long run is tried once, not once per
 *     character; patterns that begin with a literal (vendor prefixes, `eyJ`, header names,
 *     `-----BEGIN`) check their left boundary in a lookbehind placed after the literal, which also
 *     lets the engine skip straight to the literal's occurrences;
 *   - no quantified group holds a quantifier whose characters a neighbour can also consume (no
 *     `(a+)+`, no `(\s*x+)*`): the only quantified groups repeat one character at a time or begin
 *     with a character the previous repetition cannot end with;
 *   - a value is never allowed to run past the place where another candidate of the same pattern
 *     starts (a URL password stops at `/`, a header value at `:` and `=`, a private-key body at
 *     `-----`), and where a terminator may be missing (a closing quote) the scan is bounded
 *     ({1,512}), so a missing terminator costs a constant per start.
 * test/performance.test.ts feeds the redactors 1 MiB inputs built to defeat each pattern.
 */

/** One vendor key family: a literal prefix and the character class and minimum length of its body. */
interface VendorKey {
  /** Human-readable vendor, for documentation and tests. */
  readonly vendor: string;
  /** Regex source for the literal prefix (escaped where needed). */
  readonly prefix: string;
  /** Regex source for the body, quantified. */
  readonly body: string;
}

const ALNUM = '[A-Za-z0-9]';
const URLSAFE = '[A-Za-z0-9_-]';

/**
 * The vendor key families. Each body has a minimum length of at least 10, longer than the 6-char
 * head a mask keeps, which is what stops `sk-pro...wxyz` from matching again.
 */
const VENDOR_KEYS: readonly VendorKey[] = [
  { vendor: 'OpenAI / Anthropic / OpenRouter and other sk- keys', prefix: 'sk-', body: `${URLSAFE}{10,}` },
  { vendor: 'Stripe secret / restricted keys', prefix: '(?:sk|rk)_(?:live|test)_', body: `${ALNUM}{10,}` },
  { vendor: 'Stripe webhook secret', prefix: 'whsec_', body: `${ALNUM}{10,}` },
  { vendor: 'GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_)', prefix: 'gh[pousr]_', body: `${ALNUM}{10,}` },
  { vendor: 'GitHub fine-grained PAT', prefix: 'github_pat_', body: '[A-Za-z0-9_]{10,}' },
  {
    vendor: 'GitLab tokens (glpat-, gldt-, glrt-, glcbt-, ...)',
    prefix: 'gl(?:pat|oas|dt|rt|rtr|cbt|ptt|ft|imt|agent|soat|ffct|wt)-',
    body: `${URLSAFE}{10,}`,
  },
  { vendor: 'Slack tokens (xoxa-, xoxb-, xoxe-, xoxo-, xoxp-, xoxr-, xoxs-)', prefix: 'xox[abeoprs]-', body: '[A-Za-z0-9-]{10,}' },
  { vendor: 'Slack app-level token', prefix: 'xapp-', body: '[A-Za-z0-9-]{10,}' },
  { vendor: 'Google API key', prefix: 'AIza', body: `${URLSAFE}{30,}` },
  { vendor: 'Google OAuth access token', prefix: 'ya29\\.', body: `${URLSAFE}{20,}` },
  { vendor: 'AWS access key id (long-term / temporary)', prefix: '(?:AKIA|ASIA)', body: '[A-Z0-9]{16}' },
  { vendor: 'Hugging Face', prefix: 'hf_', body: `${ALNUM}{10,}` },
  { vendor: 'npm', prefix: 'npm_', body: `${ALNUM}{10,}` },
  { vendor: 'PyPI', prefix: 'pypi-', body: `${URLSAFE}{10,}` },
  { vendor: 'SendGrid', prefix: 'SG\\.', body: `${URLSAFE}{16,}(?:\\.${URLSAFE}{16,})?` },
  { vendor: 'DigitalOcean (dop_v1_, doo_v1_, dor_v1_)', prefix: 'do[opr]_v1_', body: `${ALNUM}{10,}` },
  { vendor: 'Shopify (shpat_, shpss_, shpca_, shppa_)', prefix: 'shp(?:at|ss|ca|pa)_', body: `${ALNUM}{10,}` },
  { vendor: 'Replicate', prefix: 'r8_', body: `${ALNUM}{10,}` },
  { vendor: 'Groq', prefix: 'gsk_', body: `${ALNUM}{10,}` },
  { vendor: 'Perplexity', prefix: 'pplx-', body: `${ALNUM}{10,}` },
  { vendor: 'Fireworks AI', prefix: 'fw_', body: `${ALNUM}{20,}` },
  { vendor: 'xAI', prefix: 'xai-', body: `${ALNUM}{20,}` },
  { vendor: 'Tavily', prefix: 'tvly-', body: `${URLSAFE}{10,}` },
  { vendor: 'Firecrawl', prefix: 'fc-', body: `${ALNUM}{10,}` },
  { vendor: 'Cerebras', prefix: 'csk-', body: `${ALNUM}{10,}` },
  { vendor: 'NVIDIA', prefix: 'nvapi-', body: `${URLSAFE}{10,}` },
  { vendor: 'Notion', prefix: 'ntn_', body: `${ALNUM}{10,}` },
  { vendor: 'Matrix', prefix: 'syt_', body: `${URLSAFE}{10,}` },
  { vendor: 'Linear', prefix: 'lin_api_', body: `${ALNUM}{10,}` },
  { vendor: 'Docker Hub', prefix: 'dckr_pat_', body: `${URLSAFE}{10,}` },
  { vendor: 'HashiCorp Vault (hvs., hvb.)', prefix: 'hv[sb]\\.', body: `${URLSAFE}{20,}` },
  { vendor: 'Figma', prefix: 'figd_', body: `${URLSAFE}{10,}` },
  { vendor: 'LangSmith', prefix: 'lsv2_(?:pt|sk)_', body: `${URLSAFE}{10,}` },
  { vendor: 'Sentry (sntrys_, sntryu_)', prefix: 'sntry[su]_', body: `${URLSAFE}{10,}` },
  { vendor: 'Atlassian API token', prefix: 'ATATT3', body: `${URLSAFE}{10,}` },
  { vendor: 'Square', prefix: 'sq0(?:atp|csp)-', body: `${URLSAFE}{10,}` },
  { vendor: 'age secret key', prefix: 'AGE-SECRET-KEY-1', body: '[A-Z0-9]{50,}' },
];

/**
 * Vendor keys a caller can show in documentation: the vendor and the literal-ish prefix source.
 * Frozen, so the table the redactor uses cannot be edited from outside.
 */
export const SECRET_KEY_FAMILIES: readonly { readonly vendor: string; readonly prefix: string }[] = Object.freeze(
  VENDOR_KEYS.map(({ vendor, prefix }) => Object.freeze({ vendor, prefix })),
);

/**
 * Where a key may start: not in the middle of an identifier-ish run (`myglpat-...` is left alone)
 * and not right after a dot (the tail of a partial mask, `...ya29`, must never start a new key),
 * except right after a JSON/C escape (`\n`, `\t`, `\u00e9`), where transcripts stored as escaped
 * JSON put a letter or hex digit directly in front of the key. It is checked as a lookbehind
 * placed *after* the literal prefix, so the engine can skip ahead to prefix occurrences instead of
 * evaluating the boundary at every position.
 */
const KEY_START = String.raw`(?:^|[^A-Za-z0-9_.-]|\\[nrt]|\\u[0-9A-Fa-f]{4})`;
/** Where a key must end: the run of key characters is over. */
const KEY_END = '(?![A-Za-z0-9_-])';

/** `prefix`, only where it starts a key. */
function keyPrefix(prefix: string): string {
  return `${prefix}(?<=${KEY_START}${prefix})`;
}

/**
 * A key body must look random: it has a digit or an upper-case letter after its leading run of
 * lower-case letters and separators. This keeps kebab- and snake-case words that happen to share a
 * prefix (`sk-learn-compatible-estimators`) untouched, at the cost of missing a truly random
 * all-lower-case body (about 1 in 10^4 for 10 characters, far less at real key lengths).
 */
const RANDOM_LOOKING = '(?=[a-z_-]*[0-9A-Z])';

const VENDOR_RE = new RegExp(
  `(?:${VENDOR_KEYS.map(({ prefix, body }) => `${keyPrefix(prefix)}${RANDOM_LOOKING}${body}`).join('|')})${KEY_END}`,
  'g',
);

function redactVendorKeys(text: string): string {
  return replaceMatches(text, VENDOR_RE, (match) => maskToken(match[0]));
}

/*
 * Keys glued to a word by `-` or `_`: a proxy or a wrapper puts its own name in front of the key
 * (`"model": "proxy-sk-proj-…"`, `x_ghp_…`). The vendor pass cannot start a key there (a key start
 * inside a run would make its patterns quadratic on runs such as `sk-sk-sk-…`), so this pass takes
 * each run of key characters once, from its start, and looks inside it in linear time: at every `-`/`_`
 * a vendor prefix may begin, and the rest of the run is a key when it is made of that family's body
 * characters only and looks generated (see GLUED_MIN_BODY). Only the key is masked; the word in front
 * stays. A run right after a dot is skipped (the tail of a mask), as the vendor pass skips it.
 */

/** A glued key's body is at least this long and holds a digit and a capital: `sk-2024-01-01T00` or
 * `load_hf_dataset2024` are words, `proxy-sk-proj-Zx81kQ2mN7pR4tV9wB3c` is a key. */
const GLUED_MIN_BODY = 16;

/** The shortest run that can hold a glued key: one character, the glue, a 2-character prefix, the body. */
const GLUED_RUN_RE = new RegExp(`(?<![A-Za-z0-9_.-])[A-Za-z0-9_-]{${1 + 1 + 2 + GLUED_MIN_BODY},}`, 'g');

/** The body character classes of the families (as written in VENDOR_KEYS), as ASCII lookup tables. */
const BODY_CLASSES: readonly string[] = [ALNUM, URLSAFE, '[A-Za-z0-9_]', '[A-Za-z0-9-]', '[A-Z0-9]'];
const CLASS_TABLES: readonly Uint8Array[] = BODY_CLASSES.map((cls) => {
  const re = new RegExp(cls);
  const table = new Uint8Array(128);
  for (let c = 0; c < 128; c++) table[c] = re.test(String.fromCharCode(c)) ? 1 : 0;
  return table;
});

interface GluedFamily {
  /** Index into BODY_CLASSES. */
  readonly cls: number;
  readonly min: number;
  /** The body has exactly `min` characters (`{16}`), not at least. */
  readonly exact: boolean;
}

/**
 * The families a glued key may belong to: those whose prefix and body are plain runs of key characters
 * (the dotted `ya29.`, `SG.`, `hvs.` families cannot sit inside such a run). Parallel to the capture
 * groups of GLUED_PREFIX_RE.
 */
const GLUED_FAMILIES: readonly (VendorKey & GluedFamily)[] = VENDOR_KEYS.flatMap((key) => {
  const m = /^(\[[^\]]+\])\{(\d+)(,?)\}$/.exec(key.body);
  const cls = m === null ? -1 : BODY_CLASSES.indexOf(m[1] ?? '');
  if (m === null || cls < 0 || key.prefix.includes('.')) return [];
  return [{ ...key, cls, min: Number(m[2]), exact: m[3] === '' }];
});

/** Every glued family's prefix, one capture group each, matched at one position (sticky). */
const GLUED_PREFIX_RE = new RegExp(GLUED_FAMILIES.map(({ prefix }) => `(${prefix})`).join('|'), 'y');

/**
 * Whether a family's prefix (a regex source: literals, classes, and non-nested `(?:a|b)` groups, as in
 * VENDOR_KEYS) can begin with `ch`.
 */
function prefixStarts(prefix: string, ch: string): boolean {
  if (prefix.startsWith('(?:')) {
    const close = prefix.indexOf(')');
    return prefix.slice(3, close).split('|').some((alt) => prefixStarts(alt, ch));
  }
  const head = /^(\[[^\]]+\]|\\.|.)/.exec(prefix)?.[1];
  return head !== undefined && new RegExp(`^${head}`).test(ch);
}

/** Characters a glued family's prefix can start with (an ASCII table): most glue positions are skipped at once. */
const PREFIX_FIRST: Uint8Array = Uint8Array.from({ length: 128 }, (_, c) =>
  GLUED_FAMILIES.some(({ prefix }) => prefixStarts(prefix, String.fromCharCode(c))) ? 1 : 0,
);

/** The last position in `run` holding a character outside body class `cls`, or -1. */
function lastOutsideOf(run: string, cls: number): number {
  const table = CLASS_TABLES[cls];
  for (let i = run.length - 1; i >= 0; i--) {
    const c = run.charCodeAt(i);
    if (c >= 128 || table?.[c] !== 1) return i;
  }
  return -1;
}

/** Masks the first glued key in one run of key characters, or returns the run unchanged. Linear in its length. */
function maskGluedKey(run: string): string {
  const n = run.length;
  // A key's body holds a digit and a capital, so it starts before the last of each.
  let lastDigit = -1;
  let lastUpper = -1;
  for (let i = 0; i < n; i++) {
    const c = run.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) lastDigit = i;
    else if (c >= 0x41 && c <= 0x5a) lastUpper = i;
  }
  const bodyBefore = Math.min(lastDigit, lastUpper);
  if (bodyBefore < 0) return run;
  // The rest of the run from `b` is all of a class exactly when the last character outside it is before `b`.
  const lastOutside = new Map<number, number>();
  for (let i = 1; i < bodyBefore; i++) {
    const glue = run.charCodeAt(i - 1);
    if ((glue !== 0x2d && glue !== 0x5f) || PREFIX_FIRST[run.charCodeAt(i)] !== 1) continue;
    GLUED_PREFIX_RE.lastIndex = i;
    const m = GLUED_PREFIX_RE.exec(run);
    if (m === null) continue;
    // The one capture group that took part (an unmatched group is undefined, whatever the DOM typing says).
    const family = GLUED_FAMILIES[m.findIndex((g: string | undefined, j) => j > 0 && g !== undefined) - 1];
    if (family === undefined) continue;
    const body = i + m[0].length;
    const length = n - body;
    if (body > bodyBefore || length < GLUED_MIN_BODY || (family.exact ? length !== family.min : length < family.min)) continue;
    let outside = lastOutside.get(family.cls);
    if (outside === undefined) {
      outside = lastOutsideOf(run, family.cls);
      lastOutside.set(family.cls, outside);
    }
    if (outside < body) return `${run.slice(0, i)}${maskToken(run.slice(i))}`;
  }
  return run;
}

function redactGluedKeys(text: string): string {
  return replaceMatches(text, GLUED_RUN_RE, (match) => maskGluedKey(match[0]));
}

/** JWTs: `eyJ` header, a payload, and an optional signature, each base64url. */
const JWT_RE = new RegExp(
  `${keyPrefix('eyJ')}${URLSAFE}{10,}\\.${URLSAFE}{4,}(?:\\.${URLSAFE}{4,})?${KEY_END}`,
  'g',
);

function redactJwts(text: string): string {
  return text.includes('eyJ') ? replaceMatches(text, JWT_RE, (match) => maskToken(match[0])) : text;
}

/**
 * PEM private-key blocks (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted, PGP). A complete block is
 * replaced whole. Its body may not contain `-----`, so a scan that finds no END stops at the
 * next dashes instead of running to the end of the text. A header without an END (a truncated
 * paste) is replaced together with the complete base64 lines that follow it.
 */
const PEM_LABEL = '[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----';
const PEM_RE = new RegExp(
  `-----BEGIN${PEM_LABEL}` +
    `(?:(?:[^-]|-(?!----))*-----END${PEM_LABEL}` +
    `|(?:\\r?\\n[A-Za-z0-9+/=]{1,128}(?=\\r?\\n|$))*)`,
  'g',
);
export const PRIVATE_KEY_MASK = '[REDACTED PRIVATE KEY]';

function redactPrivateKeys(text: string): string {
  return text.includes('-----BEGIN') ? replaceMatches(text, PEM_RE, () => PRIVATE_KEY_MASK) : text;
}

/*
 * Credential headers. The value is a run of printable ASCII without space, quotes, backtick, `:`,
 * `=`, `,` or `;` (so a value never swallows the next `name: value` or `name=value` pair), then up to
 * three `=` of base64 padding. Its last character may not be closing punctuation (`.`, `!`, `?`,
 * `)`, `]`, `}`) or a backslash, so `Bearer abc.` keeps its full stop and `\"Bearer abc\"` (escaped
 * JSON) keeps its escape. Whatever follows the value may not continue it (apart from such
 * punctuation), so the value read back from a mask ends in the same place.
 */
const CREDENTIAL_CHAR = String.raw`[\x21\x23-\x26\x28-\x2b\x2d-\x39\x3c\x3e-\x5f\x61-\x7e]`;
const CREDENTIAL_LAST = String.raw`[\x23-\x26\x28\x2a\x2b\x2d\x2f-\x39\x3c\x3e\x40-\x5b\x5e\x5f\x61-\x7c\x7e]`;
const CREDENTIAL_PUNCT = String.raw`[!).?\\\]}]`;
const CREDENTIAL = `${CREDENTIAL_CHAR}*${CREDENTIAL_LAST}={0,3}(?!${CREDENTIAL_PUNCT}*${CREDENTIAL_LAST})`;
/** Optional quoting around a header name or value, including escaped JSON quotes (`\"`). */
const QUOTE = String.raw`(?:\\{0,3}["'])?`;
const AUTH_SCHEMES =
  'bearer|basic|token|digest|bot|negotiate|ntlm|apikey|key|oauth|jwt|sso-key|ssws|aws4-hmac-sha256';

const HEADER_NAMES = [
  '(?:proxy-)?authorization',
  'x-api-key',
  'x-goog-api-key',
  'api-key',
  'x-api-token',
  'x-auth-token',
  'x-access-token',
  'x-amz-security-token',
  'x-vault-token',
  'x-gitlab-token',
  'private-token',
  'x-figma-token',
].join('|');

/**
 * One pattern for every credential header, so that overlapping candidates
 * (`x-api-key: Proxy-Authorization: ...`) are resolved leftmost-first in a single scan, the same
 * way on every run. The name may be quoted (`"authorization": "Bearer ..."`), JSON-escaped
 * (`\"authorization\": ...`) or followed by `=` (`authorization="Bearer ..."`).
 */
const HEADER_RE = new RegExp(
  String.raw`(?<![A-Za-z0-9_-])((?:${HEADER_NAMES})${QUOTE}[ \t]*[:=][ \t]*${QUOTE})` +
    String.raw`(?:(${AUTH_SCHEMES})([ \t]+))?(${CREDENTIAL})`,
  'gi',
);
const AUTH_SCHEME_WORD = new RegExp(`^(?:${AUTH_SCHEMES})$`, 'i');
const HEADER_HINT = /authorization|-key|-token/i;

/**
 * Whether a header value is worth masking: opaque-looking (a digit, an inner capital, or 16+
 * characters), not a reference to a secret held elsewhere, and not already masked. Prose such as
 * `Authorization: the server checks ...` keeps its words.
 */
function isMaskableCredential(value: string): boolean {
  if (isMaskedValue(value) || isReference(value)) {
    return false;
  }
  return value.length >= 16 || /[0-9]/.test(value) || /[A-Z]/.test(value.slice(1));
}

export function redactHeaders(text: string): string {
  if (!HEADER_HINT.test(text)) {
    return text;
  }
  return replaceMatches(text, HEADER_RE, (match) => {
    const [whole, lead = '', scheme, gap = '', credential = ''] = match;
    if (scheme === undefined && AUTH_SCHEME_WORD.test(credential)) {
      return whole; // `Authorization: Bearer` with nothing after it
    }
    if (!isMaskableCredential(credential)) {
      return whole;
    }
    return `${lead}${scheme ?? ''}${gap}${maskToken(credential)}`;
  });
}

/*
 * URL credentials: `scheme://user:PASSWORD@host` (password always masked in full) and the
 * bare-token form `scheme://TOKEN@host` (git remotes with a token as user name). User and
 * password follow RFC 3986: no `/`, `?`, `#` or `@` unencoded, so `http://localhost:5173/@vite/client`
 * is not mistaken for a password, and one scan never runs past the next `://`.
 */
const URL_CREDENTIALS_RE =
  /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^\s:@/?#"'`<>[\]\\]*)(?::([^\s@/?#"'`<>\\]+))?@/g;
const BARE_TOKEN = /^[A-Za-z0-9._~%+-]{20,}$/;

function redactUrlCredentials(text: string): string {
  if (!text.includes('://')) {
    return text;
  }
  return replaceMatches(text, URL_CREDENTIALS_RE, (match) => {
    const [whole, scheme = '', user = '', password] = match;
    if (isMaskedValue(whole)) {
      return whole; // already masked, here or by another pass
    }
    if (password !== undefined) {
      return isReference(password) ? whole : `${scheme}${user}:${FULL_MASK}@`;
    }
    if (BARE_TOKEN.test(user) && /[0-9]/.test(user) && /[A-Za-z]/.test(user)) {
      return `${scheme}${maskToken(user)}@`;
    }
    return whole;
  });
}

/** Telegram bot tokens: `[bot]<8-10 digit bot id>:<30+ char secret>`; the id stays readable. */
const TELEGRAM_RE = /(?<![A-Za-z0-9_])((?:bot)?[0-9]{8,10}):[A-Za-z0-9_-]{30,}(?![A-Za-z0-9_-])/g;

function redactTelegramTokens(text: string): string {
  return text.includes(':') ? replaceMatches(text, TELEGRAM_RE, (match) => `${match[1] ?? ''}:${FULL_MASK}`) : text;
}

/*
 * Environment-style assignments whose UPPER_CASE name ends in a secret word
 * (`DB_PASSWORD=...`, `export GITHUB_TOKEN=...`, `AWS_SECRET_ACCESS_KEY=...`). Lower-case keys,
 * YAML `key: value` and JSON fields are left alone: in code and prose they are far more often
 * fixtures and settings (`"apiKey": "test-fixture"`, `max_tokens=4096`) than leaks.
 */
const ASSIGNMENT_RE =
  /(?<![A-Za-z0-9_$.-])([A-Z][A-Z0-9_]{0,127})([ \t]*)=(?![=~])([ \t]*)(?:"([^"\r\n]{1,512})"|'([^'\r\n]{1,512})'|([^\s"'`]+))/g;
const SECRET_NAME = /(?:^|_)(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|ACCESS_KEY|PRIVATE_KEY|SECRET_KEY|AUTH_KEY|CREDENTIALS?)$/;
const PASSWORD_NAME = /(?:^|_)(?:PASSWORD|PASSWD|PASSPHRASE)$/;
const CODE_VALUE = /^(?:process\.env|os\.(?:environ|getenv)|import\.meta\.env|ENV\[)|[()]/;
const NON_SECRET_WORD = /^(?:true|false|yes|no|on|off|null|none|nil|undefined)$/i;

function shouldMaskAssignment(name: string, spaced: boolean, quoted: boolean, value: string): boolean {
  if (!SECRET_NAME.test(name) || isMaskedValue(value) || isReference(value)) {
    return false;
  }
  if (CODE_VALUE.test(value) || NON_SECRET_WORD.test(value)) {
    return false;
  }
  const isPassword = PASSWORD_NAME.test(name);
  if (!isPassword && /^[0-9]+$/.test(value)) {
    return false; // `MAX_TOKEN=4096`: a setting, not a credential
  }
  if (spaced && !quoted) {
    // `SECRET_KEY = settings.SECRET_KEY` is code; only a clearly opaque literal counts.
    return value.length >= 16 && /[0-9]/.test(value) && /[A-Za-z]/.test(value);
  }
  return true;
}

export function redactAssignments(text: string): string {
  if (!text.includes('=')) {
    return text;
  }
  return replaceMatches(text, ASSIGNMENT_RE, (match) => {
    const [whole, name = '', before = '', after = '', doubleQuoted, singleQuoted, bare] = match;
    const value = doubleQuoted ?? singleQuoted ?? bare ?? '';
    if (!shouldMaskAssignment(name, before !== '' || after !== '', bare === undefined, value)) {
      return whole;
    }
    const quote = doubleQuoted !== undefined ? '"' : singleQuoted !== undefined ? "'" : '';
    return `${name}${before}=${after}${quote}${maskToken(value)}${quote}`;
  });
}

/**
 * Masks credentials in `text`: vendor API keys and tokens (OpenAI, Anthropic, GitHub, GitLab,
 * Slack, Google, AWS, Stripe, Hugging Face, npm, PyPI, SendGrid and more than twenty others, see
 * {@link SECRET_KEY_FAMILIES}), `Authorization` / `Proxy-Authorization` and API-key header values
 * (plain, quoted and JSON forms), PEM private-key blocks, JWTs, passwords and bare tokens in URL
 * userinfo, Telegram bot tokens, and UPPER_CASE `*_PASSWORD=` / `*_TOKEN=` / `*_API_KEY=`-style
 * assignments.
 *
 * Guarantees:
 * - A masked secret keeps at most its first 6 and last 4 characters (`sk-pro...Q7r8`), and only when
 *   it is at least 18 characters long; shorter secrets, URL passwords and the secret half of
 *   Telegram tokens become `***`; private keys become `[REDACTED PRIVATE KEY]`.
 * - Deterministic: the output depends on `text` alone.
 * - Idempotent: `redactSecrets(redactSecrets(x)) === redactSecrets(x)`.
 * - Runs in time linear in `text.length`, whatever the input.
 * - Text with no secret shape comes back byte-identical, including code, logs, UUIDs, hashes,
 *   `max_tokens=4096`, `$TOKEN` / `${TOKEN}` references and URLs without credentials.
 */
export function redactSecrets(text: string): string {
  return redactHeaders(redactAssignments(redactSecretTokens(text)));
}

/**
 * The self-delimiting passes, in pipeline order: key blocks, vendor keys, vendor keys glued to a word,
 * JWTs, bot tokens, then URL userinfo. `redactSecrets` follows them with the assignment pass and then the header pass;
 * `redactPrivacy` slots its contact-data passes in before those two.
 *
 * Why the pipeline is idempotent: every pass replaces a whole value whose edges are not characters
 * of the shapes the earlier passes look for, and leaves behind `***` or a head, `...` and a tail.
 * No secret may start right after a dot, every key shape needs more than the 6 characters a head
 * keeps, and the context passes (URL userinfo, assignments, headers) skip any value that contains
 * `***` or `...`. So the output of a later pass never gives an earlier pass anything new to find,
 * a pass never judges a value differently because a later pass masked part of it, and a second run
 * changes nothing. The property tests exercise this on random concatenations of pattern fragments.
 */
export function redactSecretTokens(text: string): string {
  let out = redactPrivateKeys(text);
  out = redactVendorKeys(out);
  out = redactGluedKeys(out);
  out = redactJwts(out);
  out = redactTelegramTokens(out);
  return redactUrlCredentials(out);
}
