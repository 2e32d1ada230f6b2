// Syntax highlighting, loaded on demand: highlight.js core plus one module per language, each a
// separate chunk, so the shell's initial JS carries none of it. The output is highlight.js's
// escaped HTML (it escapes the source text), safe to set as innerHTML of a <code> element.
import type { HLJSApi, LanguageFn } from 'highlight.js'

type Loader = () => Promise<{ default: LanguageFn }>

const LANGUAGES: Record<string, Loader> = {
  typescript: () => import('highlight.js/lib/languages/typescript'),
  javascript: () => import('highlight.js/lib/languages/javascript'),
  python: () => import('highlight.js/lib/languages/python'),
  bash: () => import('highlight.js/lib/languages/bash'),
  json: () => import('highlight.js/lib/languages/json'),
  diff: () => import('highlight.js/lib/languages/diff'),
  yaml: () => import('highlight.js/lib/languages/yaml'),
  rust: () => import('highlight.js/lib/languages/rust'),
  go: () => import('highlight.js/lib/languages/go'),
  css: () => import('highlight.js/lib/languages/css'),
  xml: () => import('highlight.js/lib/languages/xml'),
  sql: () => import('highlight.js/lib/languages/sql'),
  java: () => import('highlight.js/lib/languages/java'),
  c: () => import('highlight.js/lib/languages/c'),
  cpp: () => import('highlight.js/lib/languages/cpp'),
  markdown: () => import('highlight.js/lib/languages/markdown'),
}

const ALIASES: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  py: 'python',
  sh: 'bash',
  shell: 'bash',
  zsh: 'bash',
  console: 'bash',
  yml: 'yaml',
  rs: 'rust',
  golang: 'go',
  html: 'xml',
  svg: 'xml',
  md: 'markdown',
  'c++': 'cpp',
  h: 'c',
  hpp: 'cpp',
  jsonc: 'json',
  patch: 'diff',
}

const NAMES: Record<string, string> = {
  typescript: 'TypeScript',
  javascript: 'JavaScript',
  python: 'Python',
  bash: 'Shell',
  json: 'JSON',
  diff: 'Diff',
  yaml: 'YAML',
  rust: 'Rust',
  go: 'Go',
  css: 'CSS',
  xml: 'HTML/XML',
  sql: 'SQL',
  java: 'Java',
  c: 'C',
  cpp: 'C++',
  markdown: 'Markdown',
}

/**
 * The label a code block shows for its fence tag: the language's name when it is one of the
 * shipped ones (`ts` → `TypeScript`), else the tag's first word as written, else undefined.
 */
export function languageLabel(tag: string | undefined): string | undefined {
  const word = tag?.trim().split(/\s+/)[0]
  if (!word) return undefined
  const known = languageOf(word)
  return known ? NAMES[known] : word
}

/** The language a fence tag names, or undefined when none of the shipped ones fits. */
export function languageOf(tag: string | undefined): string | undefined {
  if (!tag) return undefined
  const name = tag.trim().toLowerCase().split(/\s+/)[0]
  const resolved = ALIASES[name] ?? name
  return resolved in LANGUAGES ? resolved : undefined
}

let core: Promise<HLJSApi> | undefined
const loaded = new Map<string, Promise<void>>()

/** Highlighted HTML of `code` in `language` (a `languageOf` result). */
export async function highlight(code: string, language: string): Promise<string> {
  core ??= import('highlight.js/lib/core').then((m) => m.default)
  const hljs = await core
  let ready = loaded.get(language)
  if (!ready) {
    ready = LANGUAGES[language]().then((m) => hljs.registerLanguage(language, m.default))
    loaded.set(language, ready)
  }
  await ready
  return hljs.highlight(code, { language, ignoreIllegals: true }).value
}
