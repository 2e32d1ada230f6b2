// @dsh/ui-markdown: Markdown for the browser client as React elements (marked's GFM lexer; no
// HTML string is injected) with syntax highlighting that loads on demand. A library for browser
// halves (bundled into each half that imports it), not a plugin.
export {
  Markdown,
  MarkdownFences,
  decodeEntities,
  safeHref,
  warmUp,
  type FenceProps,
  type MarkdownProps,
  type Translate,
} from './markdown.tsx'
export { highlight, languageLabel, languageOf } from './highlight.ts'
export { MARKDOWN_CSS } from './styles.ts'
