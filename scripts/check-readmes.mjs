#!/usr/bin/env node
// @ts-check
// Checks that every package (packages/<family>/<name>) and every bundle (bundles/<name>) has a
// README.md with, in this order: an intro paragraph before the first "##" heading, then the
// level-2 headings "Config", "Model Experience" and "Known Limitations" (other headings may sit
// between them). Exits 1 naming the first file and what is missing or out of order.
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

/** @param {string} root @returns {string[]} every problem, one per README, in path order */
export function allProblems(root) {
  const dirs = packageDirs(root)
  if (!dirs.length) return [`${root}: no packages/*/* or bundles/* directories found`]
  const out = []
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
