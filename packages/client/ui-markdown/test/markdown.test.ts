// Markdown rendered by React's server renderer: GFM blocks as elements, nothing injected.
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { Markdown, decodeEntities, languageLabel, languageOf, safeHref, warmUp } from '../src/index.ts'

const LABELS: Record<string, string> = { copy: 'Copy', copied: 'Copied', taskDone: 'done', taskOpen: 'not done' }
const t = (key: string) => LABELS[key] ?? key

describe('Markdown', () => {
  it('renders GFM tables, task lists, code blocks and inline marks as elements', () => {
    const html = renderToStaticMarkup(
      h(Markdown, {
        t,
        text: '# Title\n\n| a | b |\n|---|:-:|\n| **1** | `x<y` |\n\n- [x] done\n- [ ] open\n\n```ts\nconst a = 1\n```\n\n~~old~~ [site](https://example.com)',
      }),
    )
    expect(html).toContain('<h1>Title</h1>')
    expect(html).toMatch(
      /<table>.*<th>a<\/th><th style="text-align:center">b<\/th>.*<strong>1<\/strong>.*<code class="dsh-md-code">x&lt;y<\/code>/s,
    )
    expect(html).toContain(
      '<li class="dsh-md-task"><input type="checkbox" readOnly="" disabled="" aria-label="done" checked=""/><span>done</span></li>',
    )
    expect(html).toContain(
      '<li class="dsh-md-task"><input type="checkbox" readOnly="" disabled="" aria-label="not done"/><span>open</span></li>',
    )
    expect(html).toContain('data-lang="ts"')
    expect(html).toContain('<code>const a = 1</code>')
    expect(html).toContain('<del>old</del>')
    expect(html).toContain('<a href="https://example.com" target="_blank" rel="noopener noreferrer">site</a>')
  })

  it('never injects HTML from the text and drops unsafe link targets', () => {
    const html = renderToStaticMarkup(
      h(Markdown, {
        t,
        text: 'hi <script>alert(1)</script> <img src=x onerror=alert(1)>\n\n[x](javascript:alert(1)) &amp; &#x4e2d;',
      }),
    )
    expect(html).not.toContain('<script>')
    expect(html).not.toContain('<img')
    expect(html).toContain('&lt;script&gt;')
    expect(html).not.toContain('javascript:')
    expect(html).toContain('&amp; 中')
    expect(safeHref(' JavaScript:alert(1)')).toBeUndefined()
    expect(safeHref('mailto:a@b.c')).toBe('mailto:a@b.c')
    expect(decodeEntities('&lt;&#39;&bogus;')).toBe("<'&bogus;")
  })
})

describe('languageLabel', () => {
  it("names a shipped language by its name, another by the fence's first word, none by nothing", () => {
    expect(languageLabel('ts')).toBe('TypeScript')
    expect(languageLabel('Shell')).toBe('Shell')
    expect(languageLabel('python title="x.py"')).toBe('Python')
    expect(languageLabel('brainfuck x')).toBe('brainfuck')
    expect(languageLabel('  ')).toBeUndefined()
    expect(languageLabel(undefined)).toBeUndefined()
  })
})

describe('languageOf', () => {
  it('maps fence tags and aliases to the shipped languages, others to none', () => {
    expect(languageOf('ts')).toBe('typescript')
    expect(languageOf('Shell')).toBe('bash')
    expect(languageOf('python title="x.py"')).toBe('python')
    expect(languageOf('brainfuck')).toBeUndefined()
    expect(languageOf(undefined)).toBeUndefined()
  })
})

describe('warmUp', () => {
  it('lexes a sample that reaches every common block rule (so their expressions are compiled before a real answer)', () => {
    const types = new Set(warmUp())
    for (const type of ['heading', 'paragraph', 'blockquote', 'list', 'code', 'table', 'hr', 'space'])
      expect(types).toContain(type)
  })
})
