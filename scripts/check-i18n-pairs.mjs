#!/usr/bin/env node
// @ts-check
// Checks every bilingual pair listed in docs/i18n/pairs.md: both files exist and have the same
// heading structure (same number of headings, same level at each position). Exits 1 naming
// the first mismatch. Usage: node scripts/check-i18n-pairs.mjs [--root DIR]
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
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
    const ha = headings(readFileSync(join(root, a), 'utf8'))
    const hb = headings(readFileSync(join(root, b), 'utf8'))
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
