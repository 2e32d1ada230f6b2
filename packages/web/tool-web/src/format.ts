// What the model reads: HTML turned into Markdown (turndown), a fetch header, and search results
// as a numbered list per query. Pure functions of their inputs, so a result reads the same every
// time it is produced.
import { createRequire } from 'node:module'
import type TurndownService from 'turndown'
import type { WebFetchResult, WebSearchResult } from '@dsh/web'

/** The part of a DOM element the table rule reads (turndown hands rules its parser's nodes). */
interface TableNode {
  nodeName: string
  previousElementSibling: TableNode | null
  parentElement: TableNode | null
  children: { length: number }
}

interface TextNode {
  nodeName: string
  textContent: string | null
  querySelector?(selector: string): unknown
}

const cellText = (content: string) =>
  content
    .replace(/\s*\n+\s*/g, ' ')
    .replace(/\|/g, '\\|')
    .trim()
const blank = (node: unknown) => {
  const n = node as TextNode
  return (n.textContent ?? '').trim() === '' && !n.querySelector?.('img')
}

// turndown (and its DOM) is loaded on the first conversion, not at boot: about 0.3 s of module
// loading that a run without web_fetch should not pay. Its package ships CommonJS for Node.
let service: TurndownService | undefined
function turndownService(): TurndownService {
  if (service) return service
  const Turndown = createRequire(import.meta.url)('turndown') as typeof TurndownService
  const turndown = new Turndown({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
    emDelimiter: '_',
    hr: '---',
  })
  turndown.remove([
    'script',
    'style',
    'noscript',
    'template',
    'svg',
    'canvas',
    'iframe',
    'object',
    'embed',
    'head',
    'form',
    'button',
    'select',
    'link',
    'meta',
  ])
  // Tables as pipe tables: turndown alone flattens each cell into its own paragraph.
  turndown.addRule('table-section', { filter: ['thead', 'tbody', 'tfoot'], replacement: (content) => content })
  turndown.addRule('table-cell', { filter: ['th', 'td'], replacement: (content) => ` ${cellText(content)} |` })
  turndown.addRule('table-row', {
    filter: 'tr',
    replacement(content, node) {
      const row = `|${content}\n`
      const element = node as unknown as TableNode
      const first =
        !element.previousElementSibling &&
        (element.parentElement?.nodeName !== 'TBODY' || !element.parentElement.previousElementSibling)
      if (!first) return row
      return `${row}|${' --- |'.repeat(element.children.length)}\n`
    },
  })
  turndown.addRule('table', { filter: 'table', replacement: (content) => `\n\n${content.trim()}\n\n` })
  // Icon-only links (drawn with CSS) would leave `[](url)`; list items left empty are dropped by tidy().
  turndown.addRule('empty-link', { filter: (node) => node.nodeName === 'A' && blank(node), replacement: () => '' })
  service = turndown
  return turndown
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }
const decodeEntities = (text: string) =>
  text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10)
      return Number.isFinite(code) && code > 0 && code < 0x110000 ? String.fromCodePoint(code) : whole
    }
    return ENTITIES[body.toLowerCase()] ?? whole
  })

/** The document's `<title>`, whitespace collapsed. */
export function htmlTitle(html: string): string | undefined {
  const match = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html.slice(0, 200_000))
  const title = match ? decodeEntities(match[1]).replace(/\s+/g, ' ').trim() : ''
  return title || undefined
}

/** Rewrites relative `href`/`src` attribute values to absolute URLs against `base`. */
export function absolutizeLinks(html: string, base: string): string {
  return html.replace(
    /(\s(?:href|src)\s*=\s*)(["'])([^"']*)\2/gi,
    (whole, lead: string, quote: string, value: string) => {
      const raw = decodeEntities(value.trim())
      if (raw === '' || /^(#|[a-z][a-z0-9+.-]*:)/i.test(raw)) return whole
      try {
        return `${lead}${quote}${new URL(raw, base).href.replace(/"/g, '%22')}${quote}`
      } catch {
        return whole
      }
    },
  )
}

/** Outside fenced code: blank out whitespace-only lines and bullets left without text, then squeeze blank runs. */
function tidy(markdown: string): string {
  let fence = ''
  const lines = markdown.split('\n').map((line) => {
    const open = /^\s*(```+|~~~+)/.exec(line)
    if (open) fence = fence ? (line.trim().startsWith(fence) ? '' : fence) : open[1]
    else if (!fence && /^[ \t]*(?:[-*+]|\d+\.)?[ \t]*$/.test(line)) return ''
    return line
  })
  return lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

/** HTML to Markdown, with links made absolute against `base`. */
export function htmlToMarkdown(html: string, base: string): string {
  const body = /<body[^>]*>([\s\S]*)<\/body>/i.exec(html)?.[1] ?? html
  return tidy(turndownService().turndown(absolutizeLinks(body, base)))
}

export const isHtml = (mediaType: string) => mediaType === 'text/html' || mediaType === 'application/xhtml+xml'

export interface FetchPresentation {
  /** What the model reads. */
  text: string
  title?: string
  /** Characters of page text after conversion. */
  chars: number
  converted: boolean
}

const size = (bytes: number) =>
  bytes >= 1024 * 1024
    ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB`
    : bytes >= 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${bytes} bytes`

/** The page as the model reads it: a short header, then the page text (Markdown for HTML). */
/** The HTML of a result that is converted: at most `maxHtmlChars` of it (conversion time grows with it). */
export const htmlToConvert = (result: WebFetchResult, maxHtmlChars: number): string | undefined =>
  isHtml(result.mediaType) ? result.content.slice(0, maxHtmlChars) : undefined

/** `markdown`: the conversion of `htmlToConvert(...)` when done elsewhere (a worker); else it is converted here. */
export function presentFetch(
  result: WebFetchResult,
  options: { maxErrorBodyChars: number; maxHtmlChars: number; markdown?: string },
): FetchPresentation {
  const converted = isHtml(result.mediaType)
  const title = converted ? htmlTitle(result.content) : undefined
  const cutHtml = converted && result.content.length > options.maxHtmlChars
  let page = converted
    ? (options.markdown ?? htmlToMarkdown(htmlToConvert(result, options.maxHtmlChars)!, result.finalUrl))
    : result.content.trim()
  if (result.status >= 400 && page.length > options.maxErrorBodyChars)
    page = `${page.slice(0, options.maxErrorBodyChars)}\n[... error page cut at ${options.maxErrorBodyChars} characters]`
  const head = [`URL: ${result.finalUrl}`]
  if (result.redirects.length > 0)
    head.push(
      `Redirected from: ${result.url} (${result.redirects.length} redirect${result.redirects.length === 1 ? '' : 's'})`,
    )
  head.push(`Status: ${result.status}${result.statusText ? ` ${result.statusText}` : ''}`)
  head.push(`Content-Type: ${result.mediaType}${converted ? ' (converted to Markdown)' : ''}`)
  if (title) head.push(`Title: ${title}`)
  if (result.truncated)
    head.push(`Note: the page is larger than the ${size(result.bytes)} read limit; only its beginning is shown.`)
  else if (cutHtml)
    head.push(
      `Note: only the first ${options.maxHtmlChars.toLocaleString('en-US')} characters of the page's HTML were converted; the rest is not shown.`,
    )
  const text = `${head.join('\n')}\n\n${page || '(empty body)'}`
  return { text, title, chars: page.length, converted }
}

export interface SearchOutcome {
  query: string
  result?: WebSearchResult
  error?: { code: string; message: string }
}

const clip = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat
}

/** Results per query as a numbered list; a failed query says why in its place. */
export function presentSearch(
  outcomes: SearchOutcome[],
  options: { maxResults: number; maxSnippetChars: number; maxAnswerChars: number },
): string {
  const provider = outcomes.find((o) => o.result)?.result?.provider
  const parts: string[] = []
  for (const outcome of outcomes) {
    const lines = [`## ${JSON.stringify(outcome.query)}`]
    if (outcome.error) lines.push(`Search failed [${outcome.error.code}]: ${outcome.error.message}`)
    else {
      const result = outcome.result!
      if (result.answer) lines.push(`Answer (${result.provider}): ${clip(result.answer, options.maxAnswerChars)}`, '')
      const hits = result.hits.slice(0, options.maxResults)
      if (hits.length === 0) lines.push('No results.')
      hits.forEach((hit, i) => {
        lines.push(`${i + 1}. ${clip(hit.title || hit.url, 200)}`, `   ${hit.url}`)
        if (hit.published) lines.push(`   Published: ${hit.published}`)
        if (hit.snippet) lines.push(`   ${clip(hit.snippet, options.maxSnippetChars)}`)
      })
    }
    parts.push(lines.join('\n'))
  }
  const head = `Web search results${provider ? ` (via ${provider})` : ''}. Cite the URLs you use; fetch a page with web_fetch for its full text.`
  return `${head}\n\n${parts.join('\n\n')}`
}
