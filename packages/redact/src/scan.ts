/**
 * `text.replace(pattern, fn)` for a global pattern, as an explicit `exec` loop: about twice as fast
 * on inputs with very many matches (no argument list per match, fewer intermediate strings), and
 * the callback gets a typed `RegExpExecArray`. Matches never overlap and are visited left to right,
 * exactly as `String.prototype.replace` visits them. Returns `text` itself when nothing matched.
 */
export function replaceMatches(text: string, pattern: RegExp, replace: (match: RegExpExecArray) => string): string {
  pattern.lastIndex = 0;
  let out = '';
  let last = 0;
  let matched = false;
  for (;;) {
    const match = pattern.exec(text);
    if (match === null) {
      break;
    }
    matched = true;
    const end = pattern.lastIndex;
    out += text.slice(last, match.index) + replace(match);
    last = end;
    if (match[0] === '') {
      pattern.lastIndex = end + 1; // no pattern here matches empty, but never loop forever
    }
  }
  pattern.lastIndex = 0;
  return matched ? out + text.slice(last) : text;
}
