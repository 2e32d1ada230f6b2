#!/usr/bin/env node
// @ts-check
// Checks every bilingual pair listed in docs/i18n/pairs.md: both files exist; each links to the
// other above its first section; they have the same heading structure (same number of headings,
// same level at each position); and the same fenced code blocks (same number, and at each
// position the same info string and the same number of lines). Code is kept verbatim in a
// translation (only its comments may be translated, in place), so a block whose length differs
// is an example the twin did not follow, e.g. a config key added to the English page only.
// Exits 1 naming the first mismatch. Usage: node scripts/check-i18n-pairs.mjs [--root DIR]
import { existsSync, readFileSync } from 'node:fs'
import { join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'

/** @param {string} text @returns {{ level: number, text: string, line: number }[]} */
export function headings(text) {
  const out = []
  let fence = ''
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    const f = /^\s*(```+|~~~+)/.exec(line)
    if (f) {
      if (!fence) fence = f[1]
      else if (line.trim().startsWith(fence)) fence = ''
      continue
    }
    if (fence) continue
    const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
    if (h) out.push({ level: h[1].length, text: h[2], line: i + 1 })
  }
  return out
}

/**
 * Fenced code blocks, fenced as `headings` reads them.
 * @param {string} text @returns {{ info: string, lines: number, line: number }[]}
 */
export function codeBlocks(text) {
  const out = []
  /** @type {{ fence: string, info: string, lines: number, line: number } | undefined} */
  let open
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    const f = /^\s*(```+|~~~+)(.*)$/.exec(line)
    if (open) {
      if (f && line.trim().startsWith(open.fence)) {
        out.push({ info: open.info, lines: open.lines, line: open.line })
        open = undefined
      } else open.lines++
    } else if (f) open = { fence: f[1], info: f[2].trim(), lines: 0, line: i + 1 }
  }
  return out
}

/**
 * Whether `text` (the file `from`) links to the file `to` above its first "##" heading: a Markdown
 * link whose target, relative to `from`'s directory, is `to` (`[中文](README.zh.md)`).
 * @param {string} text @param {string} from @param {string} to
 */
export function linksTo(text, from, to) {
  const top = []
  for (const line of text.split('\n')) {
    if (/^#{2,6}\s/.test(line)) break
    top.push(line)
  }
  for (const m of top.join('\n').matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
    if (/^[a-z]+:/i.test(m[1])) continue
    if (posix.normalize(posix.join(posix.dirname(from), m[1])) === posix.normalize(to)) return true
  }
  return false
}

/** Rows of the pairing table: `| \`README.md\` | \`README.zh.md\` | ... |`. @param {string} text */
export function readPairs(text) {
  const pairs = []
  for (const line of text.split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|/.exec(line)
    if (m) pairs.push([m[1], m[2]])
  }
  return pairs
}

/** @param {string} root @returns {string | undefined} the first problem, or undefined */
export function checkPairs(root) {
  const record = join(root, 'docs/i18n/pairs.md')
  if (!existsSync(record)) return `${record}: missing pairing record`
  const pairs = readPairs(readFileSync(record, 'utf8'))
  if (!pairs.length) return `${record}: no pairs listed (expected rows like | \`README.md\` | \`README.zh.md\` |)`
  for (const [a, b] of pairs) {
    for (const f of [a, b]) if (!existsSync(join(root, f))) return `${f}: listed in docs/i18n/pairs.md but missing`
    const ta = readFileSync(join(root, a), 'utf8')
    const tb = readFileSync(join(root, b), 'utf8')
    for (const [from, text, to] of [
      [a, ta, b],
      [b, tb, a],
    ]) {
      if (!linksTo(text, from, to)) {
        const target = posix.relative(posix.dirname(from), to)
        return `${from}: no link to its twin ${to} above the first section (a line such as "[${from === a ? '中文' : 'English'}](${target})" under the title)`
      }
    }
    const ha = headings(ta)
    const hb = headings(tb)
    const n = Math.min(ha.length, hb.length)
    for (let i = 0; i < n; i++) {
      if (ha[i].level !== hb[i].level) {
        return `${b}:${hb[i].line}: heading ${i + 1} "${hb[i].text}" is level ${hb[i].level}, but ${a}:${ha[i].line} "${ha[i].text}" is level ${ha[i].level}`
      }
    }
    if (ha.length !== hb.length) {
      const [more, extra] = ha.length > hb.length ? [a, ha[n]] : [b, hb[n]]
      return `${a} has ${ha.length} headings, ${b} has ${hb.length}; first unmatched: ${more}:${extra.line} "${extra.text}"`
    }
    const ca = codeBlocks(ta)
    const cb = codeBlocks(tb)
    const m = Math.min(ca.length, cb.length)
    for (let i = 0; i < m; i++) {
      if (ca[i].info !== cb[i].info || ca[i].lines !== cb[i].lines) {
        const what = ca[i].info !== cb[i].info ? `is "${cb[i].info}"` : `has ${cb[i].lines} lines`
        const was = ca[i].info !== cb[i].info ? `is "${ca[i].info}"` : `has ${ca[i].lines}`
        return `${b}:${cb[i].line}: code block ${i + 1} ${what}, but ${a}:${ca[i].line} ${was}; code stays verbatim in a translation, so bring the block over from ${a}`
      }
    }
    if (ca.length !== cb.length) {
      const [more, extra] = ca.length > cb.length ? [a, ca[m]] : [b, cb[m]]
      return `${a} has ${ca.length} code blocks, ${b} has ${cb.length}; first unmatched: ${more}:${extra.line}`
    }
  }
  return undefined
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--root')
  const root = i > 0 ? process.argv[i + 1] : fileURLToPath(new URL('..', import.meta.url))
  const problem = checkPairs(root)
  if (problem) {
    console.error(`check-i18n-pairs: ${problem}`)
    process.exit(1)
  }
  console.log('check-i18n-pairs: ok')
}
