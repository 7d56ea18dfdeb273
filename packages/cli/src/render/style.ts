/**
 * The HTML page's only stylesheet (inline; the page's policy allows nothing else). Light and dark follow
 * `prefers-color-scheme`; in print every `<details>` is shown open and the light palette is used.
 */
export const STYLE = `
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --line: #d1d9e0;
  --user: #ddf4ff; --assistant: #f6f8fa; --tool: #fff8c5; --system: #f3e8ff; --code: #eff2f5; --link: #0550ae; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d;
  --user: #0c2d48; --assistant: #151b23; --tool: #2e2a12; --system: #2a1f3d; --code: #1f262e; --link: #71b7ff; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header, main { max-width: 60rem; margin: 0 auto; padding: 1rem 1.25rem; }
header { border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.4rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0; color: var(--muted); }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
section { border: 1px solid var(--line); border-radius: 8px; margin: 0 0 1rem; padding: .75rem 1rem; }
section.user { background: var(--user); }
section.assistant { background: var(--assistant); }
section.tool { background: var(--tool); }
section.system { background: var(--system); }
h2.role { font-size: .95rem; margin: 0 0 .5rem; }
h2.role .ts { font-weight: 400; color: var(--muted); margin-left: .5rem; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.markdown { overflow-wrap: anywhere; }
.markdown > :first-child { margin-top: 0; }
.markdown > :last-child { margin-bottom: 0; }
.markdown h1, .markdown h2, .markdown h3, .markdown h4, .markdown h5, .markdown h6 { margin: 1rem 0 .5rem; line-height: 1.25; }
.markdown h1 { font-size: 1.5rem; } .markdown h2 { font-size: 1.3rem; } .markdown h3 { font-size: 1.1rem; }
.markdown table { border-collapse: collapse; margin: .5rem 0; display: block; max-width: 100%; overflow-x: auto; }
.markdown th, .markdown td { border: 1px solid var(--line); padding: .3rem .6rem; }
.markdown th { background: var(--code); }
.markdown blockquote { margin: .5rem 0; padding: 0 1rem; border-left: 4px solid var(--line); color: var(--muted); }
a { color: var(--link); }
code { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
:not(pre) > code { background: var(--code); border-radius: 4px; padding: .1rem .3rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--code); border: 1px solid var(--line);
  border-radius: 6px; padding: .5rem .75rem; margin: .5rem 0; }
details { margin-top: .5rem; }
summary { cursor: pointer; font-weight: 600; overflow-wrap: anywhere; }
@media print {
  :root { color-scheme: light; --fg: #000; --bg: #fff; --muted: #444; --line: #999; --user: #fff; --assistant: #fff;
    --tool: #fff; --system: #fff; --code: #f4f4f4; --link: #000; }
  header, main { max-width: none; }
  section { break-inside: avoid-page; }
  /* Show the content of every closed <details>: the slot pseudo-element where supported, the children elsewhere. */
  details::details-content { content-visibility: visible; display: block; }
  details:not([open]) > :not(summary) { display: block; }
  summary { cursor: auto; list-style: none; }
  summary::-webkit-details-marker { display: none; }
  a[href]::after { content: " <" attr(href) ">"; font-size: .85em; color: var(--muted); }
}
`;
