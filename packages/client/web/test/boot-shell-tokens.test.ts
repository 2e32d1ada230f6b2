// The static shell of index.html paints before @dsh/client-design's stylesheet is in, so
// `.boot-shell` (src/styles.css) carries copies of the few tokens it paints with. These tests keep
// the copies equal to the design system's values (light, and dark by the system setting), and
// check that every token the shell's own rules read is among them.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { tokensCss } from '@dsh/client-design'

const css = readFileSync(new URL('../src/styles.css', import.meta.url), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '')
const html = readFileSync(new URL('../index.html', import.meta.url), 'utf8')

/** Top-level rules (`selector { body }`), with the at-rule they sit in (`''` at the top). */
function rules(text: string, within = ''): { at: string; selector: string; body: string }[] {
  const out: { at: string; selector: string; body: string }[] = []
  let i = 0
  while (i < text.length) {
    const open = text.indexOf('{', i)
    if (open < 0) break
    const selector = text.slice(i, open).trim()
    let depth = 1
    let j = open + 1
    for (; j < text.length && depth > 0; j++) depth += text[j] === '{' ? 1 : text[j] === '}' ? -1 : 0
    const body = text.slice(open + 1, j - 1)
    if (selector.startsWith('@')) out.push(...rules(body, selector))
    else out.push({ at: within, selector, body })
    i = j
  }
  return out
}

/** The `--dsh-*` custom properties a declaration block sets. */
const customProperties = (body: string): Map<string, string> =>
  new Map([...body.matchAll(/(--dsh-[\w-]+)\s*:\s*([^;]+);?/g)].map((m) => [m[1], m[2].trim().replace(/\s+/g, ' ')]))

const designRules = rules(tokensCss())
const designLight = customProperties(designRules.find((r) => r.selector === ':root' && r.at === '')!.body)
const designDark = customProperties(designRules.find((r) => r.selector === ':root[data-theme=dark]')!.body)
const shellRules = rules(css)
const shellLight = customProperties(shellRules.find((r) => r.selector === '.boot-shell' && r.at === '')!.body)
const shellDark = customProperties(
  shellRules.find((r) => r.selector === '.boot-shell' && /prefers-color-scheme:\s*dark/.test(r.at))!.body,
)

describe("the boot shell's copies of the design tokens", () => {
  it('are the values of @dsh/client-design, light and dark', () => {
    expect(shellLight.size).toBeGreaterThan(5)
    for (const [name, value] of shellLight) expect(value, name).toBe(designLight.get(name))
    expect(shellDark.size).toBeGreaterThan(0)
    for (const [name, value] of shellDark) expect(value, name).toBe(designDark.get(name) ?? designLight.get(name))
    // Every colour the shell copies has its dark value too.
    for (const name of shellLight.keys())
      if (name.startsWith('--dsh-color-')) expect(shellDark.has(name), `${name} has no dark copy`).toBe(true)
  })

  it("cover every token the shell's own rules read", () => {
    // The classes of the shell's markup in index.html.
    const shell = /<div class="app boot-shell"[\s\S]*?<\/div><\/div>\s*<\/body>/.exec(html)?.[0] ?? ''
    const classes = new Set([...shell.matchAll(/class="([^"]+)"/g)].flatMap((m) => m[1].split(/\s+/)))
    expect(classes.has('conversation-header')).toBe(true)
    const read = new Set<string>()
    for (const rule of shellRules) {
      if (rule.at && !/max-width|prefers-color-scheme/.test(rule.at)) continue
      // A rule that styles one of the shell's classes (by the selector's last compound).
      const applies = rule.selector.split(',').some((s) => {
        const last = s.trim().split(/\s+|>/).at(-1) ?? ''
        const own = [...last.matchAll(/\.([\w-]+)/g)].map((m) => m[1])
        return own.length > 0 && own.every((c) => classes.has(c)) && !/:(hover|focus|active)/.test(last)
      })
      if (applies) for (const m of rule.body.matchAll(/var\((--dsh-[\w-]+)/g)) read.add(m[1])
    }
    expect(read.size).toBeGreaterThan(3)
    const missing = [...read].filter((name) => !shellLight.has(name))
    expect(missing, 'tokens the shell reads but does not carry').toEqual([])
  })
})
