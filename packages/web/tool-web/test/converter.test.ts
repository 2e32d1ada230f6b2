// The worker-thread converter. Sources have no built worker, so this loads the built package
// (dist/, made by the vitest global setup), whose converter finds dist/convert-worker.js.
import { afterEach, describe, expect, it } from 'vitest'
import { createConverter as sourceConverter, htmlToMarkdown, type HtmlConverter } from '../src/index.ts'

type Module = typeof import('../src/index.ts')
const dist: Module = await import(new URL('../dist/index.js', import.meta.url).href)

const page = (n: number) =>
  `<html><body>${Array.from({ length: n }, (_, i) => `<h3>Part ${i}</h3><p>Text ${i} with <a href="/p/${i}">a link</a>.</p>`).join('')}</body></html>`

let open: HtmlConverter[] = []
afterEach(async () => {
  await Promise.all(open.map((c) => c.close()))
  open = []
})
const make = (m: Module, workerMinChars: number) => {
  const converter = m.createConverter({ workerMinChars })
  open.push(converter)
  return converter
}

describe('createConverter', () => {
  it('from dist, converts large pages in a worker, with the same Markdown as in-thread', async () => {
    const converter = make(dist, 1000)
    expect(converter.threaded).toBe(true)
    const html = page(400)
    const [a, b] = await Promise.all([
      converter.convert(html, 'https://e.x/docs/'),
      converter.convert(page(300), 'https://e.x/'),
    ])
    expect(a).toBe(htmlToMarkdown(html, 'https://e.x/docs/'))
    expect(a).toContain('[a link](https://e.x/p/399)')
    expect(b).toContain('### Part 299')
  })

  it('an abort terminates the conversion; the next page starts a new worker', async () => {
    const converter = make(dist, 1000)
    const controller = new AbortController()
    const pending = converter.convert(page(20_000), 'https://e.x/', controller.signal)
    setTimeout(() => controller.abort(), 20)
    const error = await pending.catch((e: Error) => e)
    expect((error as Error).name).toBe('ConversionAborted')
    expect(await converter.convert(page(50), 'https://e.x/')).toContain('### Part 49')
  })

  it('small pages and runs from sources convert in-thread', async () => {
    const fromSource = make({ createConverter: sourceConverter } as Module, 0)
    expect(fromSource.threaded).toBe(false)
    expect(await fromSource.convert('<p>hi</p>', 'https://e.x/')).toBe('hi')
  })
})
