#!/usr/bin/env node
// HTML-to-Markdown cost of web_fetch (@dsh/tool-web's htmlToMarkdown, turndown) on synthetic pages
// of growing size, against a baseline measured in the same run: stripping the tags of the same
// page with one regular expression (the cheapest possible "conversion"). Prints ms, MB/s and the
// ratio to the baseline per size; a steady ms-per-MB across sizes shows the cost stays linear.
// BENCH_RUNS (default 3) runs per size; the median is printed.
import { performance } from 'node:perf_hooks'

const { htmlToMarkdown } = await import(new URL('../packages/web/tool-web/dist/index.js', import.meta.url).href)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)

function page(paragraphs) {
  const body = Array.from({ length: paragraphs }, (_, i) =>
    i % 50 === 0
      ? `<h2>Section ${i}</h2><table><tr><th>key</th><th>value</th></tr><tr><td>k${i}</td><td>${i}</td></tr></table>`
      : `<div class="c"><p>Paragraph ${i} with <a href="/p/${i}">a link</a>, <code>code()</code> and <strong>bold</strong> text. ${'Lorem ipsum dolor sit amet. '.repeat(3)}</p></div>`,
  ).join('\n')
  return `<!doctype html><html><head><title>Bench</title><style>.c{}</style></head><body><nav><a href="/">Home</a></nav>${body}<script>var x = 1</script></body></html>`
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
function time(fn) {
  const out = []
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now()
    fn()
    out.push(performance.now() - t)
  }
  return median(out)
}

htmlToMarkdown(page(200), 'https://bench.example/') // warm up
console.log('size      convert ms   MB/s   ms/MB   baseline ms   ratio')
for (const paragraphs of [1_000, 4_000, 16_000]) {
  const html = page(paragraphs)
  const mb = Buffer.byteLength(html) / (1024 * 1024)
  const convert = time(() => htmlToMarkdown(html, 'https://bench.example/docs/'))
  const baseline = time(() => html.replace(/<[^>]+>/g, ''))
  console.log(
    `${mb.toFixed(2).padStart(5)} MB ${convert.toFixed(0).padStart(10)} ${(mb / (convert / 1000)).toFixed(2).padStart(7)} ${(convert / mb).toFixed(0).padStart(7)} ${baseline.toFixed(1).padStart(13)} ${(convert / baseline).toFixed(0).padStart(7)}x`,
  )
}
