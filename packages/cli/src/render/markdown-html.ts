/**
 * Message Markdown → HTML for the HTML format, with markdown-it (CommonMark + GFM tables and
 * strikethrough). The output can carry no markup the message chose itself:
 * - raw HTML is off (`html: false`): a tag in a message is shown as its text;
 * - a link is made only for an `http:`, `https:` or `mailto:` URL; any other destination (`javascript:`,
 *   `data:`, `file:`, relative paths, anchors) leaves the Markdown source as plain text;
 * - an image is never fetched: it becomes a link to its URL labelled with its alt text (or text, when its
 *   URL is not http(s));
 * - a fenced block is `<pre><code class="language-…">` with the language reduced to `[A-Za-z0-9_+-]`.
 */
import MarkdownIt from 'markdown-it';

type RenderRule = NonNullable<MarkdownIt['renderer']['rules']['fence']>;
type Token = Parameters<RenderRule>[0][number];

/** The token a render rule was called for (markdown-it always passes an index inside the list). */
function tokenAt(tokens: readonly Token[], idx: number): Token {
  const token = tokens[idx];
  if (token === undefined) throw new RangeError(`markdown-it render rule called for token ${idx} of ${tokens.length}`);
  return token;
}

const LINK_SCHEMES = /^(?:https?:\/\/[^/\s]|mailto:[^\s])/i;
const IMAGE_SCHEMES = /^https?:\/\/[^/\s]/i;

/** True for a URL the exports may turn into a link: `http://host…`, `https://host…` or `mailto:…`, nothing else. */
export function isAllowedLink(url: string): boolean {
  return LINK_SCHEMES.test(url);
}

/** A fenced block's language reduced to the characters a class name may safely hold (`c++`, `objective_c`, `x-y`). */
export function codeLanguage(info: string): string {
  const first = info.trim().split(/\s+/)[0] ?? '';
  return first.replace(/[^A-Za-z0-9_+-]/g, '');
}

const renderFence: RenderRule = (tokens, idx) => {
  const token = tokenAt(tokens, idx);
  const language = codeLanguage(token.info);
  const cls = language === '' ? '' : ` class="language-${language}"`;
  return `<pre><code${cls}>${escapeHtml(token.content)}</code></pre>\n`;
};

const renderImage: RenderRule = (tokens, idx, options, env, self) => {
  const token = tokenAt(tokens, idx);
  const src = token.attrGet('src') ?? '';
  const alt = self.renderInlineAsText(token.children ?? [], options, env);
  const label = alt.trim() === '' ? src : alt;
  if (!IMAGE_SCHEMES.test(src)) return escapeHtml(label);
  return `<a class="image-link" href="${escapeHtml(src)}" rel="noopener noreferrer nofollow">${escapeHtml(label)}</a>`;
};

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes the five characters that are special in HTML text and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

function createRenderer(): MarkdownIt {
  const md = new MarkdownIt('default', { html: false, linkify: true, typographer: false });
  md.validateLink = isAllowedLink;
  md.renderer.rules.fence = renderFence;
  md.renderer.rules.image = renderImage;
  // Indented code blocks get the same shape as fences without a language.
  md.renderer.rules.code_block = (tokens, idx) => `<pre><code>${escapeHtml(tokenAt(tokens, idx).content)}</code></pre>\n`;
  const defaultLinkOpen = md.renderer.rules.link_open;
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    const token = tokenAt(tokens, idx);
    token.attrSet('rel', 'noopener noreferrer nofollow');
    return defaultLinkOpen !== undefined ? defaultLinkOpen(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options);
  };
  return md;
}

let renderer: MarkdownIt | undefined;

/** A message's Markdown as an HTML fragment under the rules above; the same text always gives the same HTML. */
export function markdownToHtml(text: string): string {
  renderer ??= createRenderer();
  return renderer.render(text);
}
