// Colours of the terminal UI. Every style is a plain function over a string; with NO_COLOR set
// (any non-empty value, https://no-color.org) every function returns its input unchanged, so no
// SGR colour sequence is written at all. Emphasis that carries meaning (the selected row of a
// list) also gets a textual marker, so nothing is lost without colour.
import type { EditorTheme, MarkdownTheme, SelectListTheme } from '@mariozechner/pi-tui'
import { highlightCode } from './highlight.ts'

export type Style = (text: string) => string

const sgr =
  (open: number, close: number): Style =>
  (text) =>
    `\x1b[${open}m${text}\x1b[${close}m`

export interface Palette {
  color: boolean
  dim: Style
  bold: Style
  italic: Style
  underline: Style
  strike: Style
  inverse: Style
  red: Style
  green: Style
  yellow: Style
  blue: Style
  magenta: Style
  cyan: Style
  gray: Style
}

const plain: Style = (text) => text

export function palette(env: NodeJS.ProcessEnv = process.env): Palette {
  const color = !(env.NO_COLOR !== undefined && env.NO_COLOR !== '')
  if (!color) {
    return {
      color,
      dim: plain,
      bold: plain,
      italic: plain,
      underline: plain,
      strike: plain,
      inverse: plain,
      red: plain,
      green: plain,
      yellow: plain,
      blue: plain,
      magenta: plain,
      cyan: plain,
      gray: plain,
    }
  }
  return {
    color,
    dim: sgr(2, 22),
    bold: sgr(1, 22),
    italic: sgr(3, 23),
    underline: sgr(4, 24),
    strike: sgr(9, 29),
    inverse: sgr(7, 27),
    red: sgr(31, 39),
    green: sgr(32, 39),
    yellow: sgr(33, 39),
    blue: sgr(34, 39),
    magenta: sgr(35, 39),
    cyan: sgr(36, 39),
    gray: sgr(90, 39),
  }
}

export function markdownTheme(p: Palette): MarkdownTheme {
  return {
    heading: (t) => p.bold(p.cyan(t)),
    link: p.underline,
    linkUrl: p.gray,
    code: p.yellow,
    codeBlock: p.green,
    codeBlockBorder: p.gray,
    quote: p.italic,
    quoteBorder: p.gray,
    hr: p.gray,
    listBullet: p.cyan,
    bold: p.bold,
    italic: p.italic,
    strikethrough: p.strike,
    underline: p.underline,
    highlightCode: (code, lang) => highlightCode(code, lang, p),
  }
}

export function selectListTheme(p: Palette): SelectListTheme {
  return {
    selectedPrefix: (t) => p.cyan(t),
    selectedText: (t) => p.bold(t),
    description: p.gray,
    scrollInfo: p.gray,
    noMatch: p.gray,
  }
}

export function editorTheme(p: Palette): EditorTheme {
  return { borderColor: p.gray, selectList: selectListTheme(p) }
}
