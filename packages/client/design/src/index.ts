// @dsh/client-design: the design system of dsh web for the shell and every browser half (a
// shared name of the page's import map, so a third-party half gets it without bundling it;
// `@dsh/client-runtime/ui` is the same module under its older name).
// Tokens as CSS custom properties and as `var()` strings, accessible primitives on Radix UI, and
// the Lucide icon set. Importing it installs the tokens' and primitives' stylesheet once.
import { PRIMITIVES_CSS } from './styles.ts'
import { tokensCss } from './tokens.ts'

export { tokens, tokensCss, light, dark, scale, type Palette } from './tokens.ts'
export * from './primitives.ts'
export * from './icons.ts'
export { PRIMITIVES_CSS }

const STYLE_ID = 'dsh-design'

/** Adds the design's stylesheet to `doc` once (first in <head>, so later sheets can refine it). */
export function installDesign(doc: Document | undefined = globalThis.document): void {
  if (!doc || doc.getElementById(STYLE_ID)) return
  const style = doc.createElement('style')
  style.id = STYLE_ID
  style.textContent = tokensCss() + PRIMITIVES_CSS
  doc.head.prepend(style)
}

installDesign()
