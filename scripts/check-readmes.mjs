#!/usr/bin/env node
// @ts-check
// Checks that every package (packages/<family>/<name>) and every bundle (bundles/<name>) has a
// README.md with, in this order: an intro paragraph before the first "##" heading, then the
// level-2 headings "Config", "Model Experience" and "Known Limitations" (other headings may sit
// between them). It also checks that every `@dsh/<name>` a user-facing document names (package and
// bundle READMEs, the root READMEs, docs/) is a package of this workspace, so a README cannot keep
// pointing at a package that was renamed or never built. Exits 1 naming the first file and what is
// missing, out of order or unknown.
// Usage: node scripts/check-readmes.mjs [--root DIR] [--all]   (--all lists every failing README)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { headings } from './check-i18n-pairs.mjs'

/** The level-2 headings every package README must have, in this order. */
export const REQUIRED = ['Config', 'Model Experience', 'Known Limitations']

/** @param {string} dir @returns {string[]} sorted sub-directory names, skipping dot dirs and node_modules */
function subdirs(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((n) => !n.startsWith('.') && n !== 'node_modules' && statSync(join(dir, n)).isDirectory())
    .sort()
}

/** @param {string} root @returns {string[]} package and bundle directories, relative to root */
export function packageDirs(root) {
  const out = []
  for (const family of subdirs(join(root, 'packages'))) {
    for (const name of subdirs(join(root, 'packages', family))) out.push(`packages/${family}/${name}`)
  }
  for (const name of subdirs(join(root, 'bundles'))) out.push(`bundles/${name}`)
  return out
}

/**
 * Problem with one README's text, or undefined when it is fine.
 * @param {string} text
 * @returns {string | undefined}
 */
export function checkReadme(text) {
  // The intro: some prose line between the title (if any) and the first level-2 heading.
  let fence = ''
  let intro = false
  for (const line of text.split('\n')) {
    if (/^\s*(```+|~~~+)/.test(line)) fence = fence ? '' : 'x'
    if (!fence && /^##\s/.test(line)) break
    if (!fence && /^#\s/.test(line)) continue
    if (line.trim()) {
      intro = true
      break
    }
  }
  if (!intro) return 'no intro paragraph before the first "##" heading'
  const h2 = headings(text).filter((h) => h.level === 2)
  /** @type {{ name: string, line: number }[]} */
  const found = []
  for (const name of REQUIRED) {
    const h = h2.find((x) => x.text === name)
    if (!h) return `missing "## ${name}"`
    found.push({ name, line: h.line })
  }
  for (let i = 1; i < found.length; i++) {
    const [a, b] = [found[i - 1], found[i]]
    if (b.line < a.line) return `"## ${b.name}" (line ${b.line}) must come after "## ${a.name}" (line ${a.line})`
  }
  return undefined
}

/**
 * Words after `@dsh/` that are placeholders in prose, not package names (`@dsh/<name>`,
 * `@dsh/bundle-*`, `@dsh/session-persistence-...` are patterns and are skipped by their next character).
 */
const PLACEHOLDERS = new Set(['x', 'deps', 'name', 'your-plugin', 'my-plugin'])

/** @param {string} root @returns {Set<string>} the `name` of every package.json under packages/ and bundles/ */
export function workspaceNames(root) {
  const names = new Set()
  for (const dir of packageDirs(root)) {
    const file = join(root, dir, 'package.json')
    if (!existsSync(file)) continue
    try {
      const name = JSON.parse(readFileSync(file, 'utf8')).name
      if (typeof name === 'string') names.add(name)
    } catch {
      // A broken package.json is another check's business (pnpm install fails on it).
    }
  }
  return names
}

/** @param {string} root @returns {string[]} the user-facing documents whose package names are checked */
function documents(root) {
  const out = packageDirs(root)
    .map((dir) => `${dir}/README.md`)
    .filter((f) => existsSync(join(root, f)))
  for (const f of ['README.md', 'README.zh.md']) if (existsSync(join(root, f))) out.push(f)
  /** @param {string} rel */
  const walk = (rel) => {
    const abs = join(root, rel)
    if (!existsSync(abs)) return
    for (const n of readdirSync(abs).sort()) {
      const child = `${rel}/${n}`
      if (statSync(join(root, child)).isDirectory()) walk(child)
      else if (n.endsWith('.md')) out.push(child)
    }
  }
  walk('docs')
  return out
}

/**
 * The first `@dsh/<name>` in `text` that is not in `names`, with its line, or undefined.
 * @param {string} text @param {Set<string>} names
 * @returns {{ name: string, line: number } | undefined}
 */
export function unknownPackage(text, names) {
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    for (const m of lines[i].matchAll(/@dsh\/([a-z0-9][a-z0-9-]*)(.?)/g)) {
      const [, word, next] = m
      if (PLACEHOLDERS.has(word) || word.endsWith('-') || /[*<{$]/.test(next)) continue
      if (!names.has(`@dsh/${word}`)) return { name: `@dsh/${word}`, line: i + 1 }
    }
  }
  return undefined
}

/** @param {string} root @returns {string[]} every problem, one per README, in path order */
export function allProblems(root) {
  const dirs = packageDirs(root)
  if (!dirs.length) return [`${root}: no packages/*/* or bundles/* directories found`]
  const out = []
  const names = workspaceNames(root)
  for (const file of documents(root)) {
    const unknown = unknownPackage(readFileSync(join(root, file), 'utf8'), names)
    if (unknown) out.push(`${file}:${unknown.line}: names ${unknown.name}, which is not a package of this workspace`)
  }
  for (const dir of dirs) {
    const file = `${dir}/README.md`
    if (!existsSync(join(root, file))) {
      out.push(`${file}: missing`)
      continue
    }
    const problem = checkReadme(readFileSync(join(root, file), 'utf8'))
    if (problem) out.push(`${file}: ${problem}`)
  }
  return out
}

/** @param {string} root @returns {string | undefined} the first problem, or undefined */
export function checkReadmes(root) {
  return allProblems(root)[0]
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--root')
  const root = i > 0 ? process.argv[i + 1] : fileURLToPath(new URL('..', import.meta.url))
  if (!root) {
    console.error('check-readmes: --root needs a directory')
    process.exit(1)
  }
  const problems = allProblems(root)
  if (problems.length) {
    for (const p of process.argv.includes('--all') ? problems : problems.slice(0, 1))
      console.error(`check-readmes: ${p}`)
    process.exit(1)
  }
  console.log(`check-readmes: ok (${packageDirs(root).length} READMEs)`)
}
