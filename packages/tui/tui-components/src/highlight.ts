// A small syntax highlighter for fenced code in replies: comments, strings, numbers and keywords
// of common languages, coloured per line with the palette (nothing under NO_COLOR). It is lexical
// only (no grammar), so it is fast enough to run on every streamed frame.
import type { Palette } from './theme.ts'

const C_LIKE =
  'abstract async await break case catch class const continue default defer delete do else enum export extends false final finally fn for func function go if impl implements import in instanceof interface let match mod mut new nil null package private protected pub public return self static struct super switch this throw throws trait true try type typeof undefined use var void while yield'
const PYTHON =
  'and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return self True try while with yield'
const SHELL = 'case do done elif else esac export fi for function if in local return then until while'

/** Keywords and comment marker for a fence language; undefined when the language is unknown. */
function grammar(lang: string | undefined): { keywords: Set<string>; comment: string } | undefined {
  const l = (lang ?? '').toLowerCase()
  if (['py', 'python'].includes(l)) return { keywords: new Set(PYTHON.split(' ')), comment: '#' }
  if (['sh', 'bash', 'shell', 'zsh', 'console'].includes(l))
    return { keywords: new Set(SHELL.split(' ')), comment: '#' }
  if (['yaml', 'yml', 'toml', 'ini'].includes(l)) return { keywords: new Set(['true', 'false', 'null']), comment: '#' }
  if (
    [
      'js',
      'jsx',
      'ts',
      'tsx',
      'javascript',
      'typescript',
      'mjs',
      'json',
      'c',
      'cpp',
      'c++',
      'h',
      'java',
      'go',
      'rust',
      'rs',
      'kotlin',
      'swift',
      'cs',
      'csharp',
      'php',
      'scala',
      'dart',
    ].includes(l)
  ) {
    return { keywords: new Set(C_LIKE.split(' ')), comment: '//' }
  }
  return undefined
}

const TOKEN = /("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`(?:[^`\\]|\\.)*`?)|(\b\d[\d_]*(?:\.\d+)?\b)|([A-Za-z_$][\w$]*)/g

/** One line per line of `code`, coloured; plain `codeBlock` style for an unknown language. */
export function highlightCode(code: string, lang: string | undefined, p: Palette): string[] {
  const lines = code.replace(/\t/g, '    ').split('\n')
  const g = grammar(lang)
  if (!g || !p.color) return lines.map((l) => p.green(l))
  return lines.map((line) => {
    // A comment runs to the end of the line (markers inside strings are not told apart).
    const at = line.indexOf(g.comment)
    const body = at >= 0 ? line.slice(0, at) : line
    const comment = at >= 0 ? p.gray(line.slice(at)) : ''
    const coloured = body.replace(
      TOKEN,
      (match, str: string | undefined, num: string | undefined, word: string | undefined) => {
        if (str) return p.green(str)
        if (num) return p.yellow(num)
        if (word && g.keywords.has(word)) return p.magenta(word)
        return match
      },
    )
    return coloured + comment
  })
}
