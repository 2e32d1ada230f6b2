// One anonymous GET with manual redirects. Every hop: scheme check, DNS resolution, the address
// guard on every resolved address, then a connection pinned to the checked address (so a second
// DNS answer cannot swap in another one). The body is decompressed, cut at the byte cap and
// decoded with the declared (or sniffed) charset.
import { lookup as dnsLookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage, type ClientRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import type { Readable } from 'node:stream'
import { WebError, type WebFetchResult } from '@dsh/web'
import type { AddressGuard } from './guard.ts'

export interface FetcherOptions {
  provider: string
  guard: AddressGuard
  maxBytes: number
  maxRedirects: number
  timeoutMs: number
  userAgent: string
  /** Media-type patterns: `text/*`, `application/json`, `application/*+json`. */
  allowedContentTypes: string[]
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

/** Does `mediaType` match one of the patterns (`*` matches one run of characters without `/`)? */
export function contentTypeAllowed(mediaType: string, patterns: string[]): boolean {
  return patterns.some((pattern) => {
    const re = new RegExp(
      `^${pattern
        .toLowerCase()
        .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*')}$`,
    )
    return re.test(mediaType)
  })
}

export function parseUrl(raw: string, provider: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new WebError(
      'INVALID_URL',
      `${JSON.stringify(raw.slice(0, 200))} is not an absolute URL; give the full address starting with https://.`,
      { provider },
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new WebError('INVALID_URL', `only http: and https: URLs can be fetched, not ${url.protocol}`, {
      provider,
      url: raw,
    })
  }
  if (url.username || url.password)
    throw new WebError(
      'INVALID_URL',
      'URLs with a user name or password in them are not fetched; remove the credentials part.',
      { provider, url: raw },
    )
  url.hash = ''
  return url
}

/** The addresses a host name stands for, each checked by the guard, in resolver order. */
async function resolveChecked(
  url: URL,
  guard: AddressGuard,
  provider: string,
): Promise<Array<{ address: string; family: number }>> {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const literal = isIP(host)
  const answers = literal
    ? [{ address: host, family: literal }]
    : await dnsLookup(host, { all: true, verbatim: true }).catch((error: NodeJS.ErrnoException) => {
        throw new WebError(
          'TRANSPORT',
          `could not resolve ${host} (${error.code ?? error.message}).`,
          { provider, url: url.href },
          { cause: error },
        )
      })
  if (answers.length === 0)
    throw new WebError('TRANSPORT', `could not resolve ${host} (no addresses).`, { provider, url: url.href })
  for (const answer of answers) {
    const kind = guard.refusal(answer.address)
    if (kind) {
      const named = literal ? host : `${host} (${answer.address})`
      throw new WebError(
        'BLOCKED_ADDRESS',
        `${named} is a ${kind} address; fetching private, loopback and link-local addresses is not allowed.`,
        { provider, url: url.href },
      )
    }
  }
  return answers
}

/** Connection errors after which the next resolved address is tried. */
const NEXT_ADDRESS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EAFNOSUPPORT'])

function pinnedLookup(address: string, family: number): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }])
    else callback(null, address, family)
  }) as unknown as LookupFunction
}

function charsetOf(contentType: string): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)?.[1]?.toLowerCase()
}

/** The charset of an HTML document's `<meta>` in its first KiB, if any. */
function sniffHtmlCharset(head: Buffer): string | undefined {
  const text = head.subarray(0, 1024).toString('latin1')
  return (/<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(text)?.[1] ?? undefined)?.toLowerCase()
}

// Bytes 0x80-0x9F of windows-1252 (0 = undefined there, kept as the C1 control). The WHATWG
// Encoding Standard maps the latin1/iso-8859-1/ascii labels to windows-1252 too; Node 20's
// TextDecoder decodes that encoding as plain ISO-8859-1, so these 32 bytes are mapped here.
const CP1252_HIGH = [
  0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0, 0,
  0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
]

function decodeCp1252(body: Buffer): string {
  const text = body.toString('latin1')
  return /[\x80-\x9f]/.test(text)
    ? text.replace(/[\x80-\x9f]/g, (c) => String.fromCharCode(CP1252_HIGH[c.charCodeAt(0) - 0x80] || c.charCodeAt(0)))
    : text
}

function decode(body: Buffer, charset: string): { text: string; charset: string } {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf)
    return { text: new TextDecoder('utf-8').decode(body.subarray(3)), charset: 'utf-8' }
  try {
    const decoder = new TextDecoder(charset)
    if (decoder.encoding === 'windows-1252') return { text: decodeCp1252(body), charset }
    return { text: decoder.decode(body), charset }
  } catch {
    return { text: new TextDecoder('utf-8').decode(body), charset: 'utf-8' }
  }
}

interface Hop {
  res: IncomingMessage
  req: ClientRequest
}

export class Fetcher {
  constructor(readonly options: FetcherOptions) {}

  async fetch(rawUrl: string, signal?: AbortSignal): Promise<WebFetchResult> {
    const { provider } = this.options
    const first = parseUrl(rawUrl, provider)
    const controller = new AbortController()
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      controller.abort()
    }, this.options.timeoutMs)
    const onAbort = () => controller.abort()
    signal?.addEventListener('abort', onAbort, { once: true })
    if (signal?.aborted) controller.abort()
    const stopped = () =>
      timedOut
        ? new WebError(
            'TIMEOUT',
            `${first.href} did not answer completely within ${this.options.timeoutMs / 1000} s.`,
            { provider, url: rawUrl },
          )
        : new WebError('ABORTED', 'the fetch was cancelled.', { provider, url: rawUrl })
    try {
      const redirects: string[] = []
      const seen = new Set<string>([first.href])
      let url = first
      for (;;) {
        if (controller.signal.aborted) throw stopped()
        const targets = await resolveChecked(url, this.options.guard, provider)
        if (controller.signal.aborted) throw stopped()
        let hop: Hop | undefined
        for (let i = 0; !hop; i++) {
          hop = await this.request(url, targets[i], controller.signal).catch((error: NodeJS.ErrnoException) => {
            if (controller.signal.aborted) throw stopped()
            if (i + 1 < targets.length && NEXT_ADDRESS.has(error.code ?? '')) return undefined
            throw new WebError(
              'TRANSPORT',
              `could not fetch ${url.href}: ${error.message}.`,
              { provider, url: url.href },
              { cause: error },
            )
          })
        }
        const status = hop.res.statusCode ?? 0
        const location = hop.res.headers.location
        if (REDIRECTS.has(status) && location) {
          hop.res.resume()
          hop.req.destroy()
          let next: URL
          try {
            next = parseUrl(new URL(location, url).href, provider)
          } catch (error) {
            throw new WebError(
              'INVALID_URL',
              `${url.href} redirected to an unusable location ${JSON.stringify(location.slice(0, 200))}: ${(error as Error).message}`,
              { provider, url: rawUrl },
            )
          }
          if (seen.has(next.href)) {
            throw new WebError(
              'TOO_MANY_REDIRECTS',
              `redirect loop: ${url.href} redirected back to ${next.href}, which was already visited (${[first.href, ...redirects].join(' -> ')}).`,
              { provider, url: rawUrl },
            )
          }
          if (redirects.length >= this.options.maxRedirects) {
            throw new WebError(
              'TOO_MANY_REDIRECTS',
              `more than ${this.options.maxRedirects} redirects starting at ${first.href}; last target ${next.href}.`,
              { provider, url: rawUrl },
            )
          }
          seen.add(next.href)
          redirects.push(next.href)
          url = next
          continue
        }
        return await this.read(hop, rawUrl, url, redirects, controller.signal).catch((error) => {
          if (controller.signal.aborted) throw stopped()
          throw error
        })
      }
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
  }

  private request(url: URL, target: { address: string; family: number }, signal: AbortSignal): Promise<Hop> {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    return new Promise<Hop>((resolve, reject) => {
      const req = send(url, {
        method: 'GET',
        lookup: pinnedLookup(target.address, target.family),
        headers: {
          'user-agent': this.options.userAgent,
          accept:
            'text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5',
          'accept-encoding': 'gzip, deflate, br',
        },
        signal,
      })
      req.on('error', reject)
      req.on('response', (res) => resolve({ res, req }))
      req.end()
    })
  }

  private async read(
    hop: Hop,
    rawUrl: string,
    url: URL,
    redirects: string[],
    signal: AbortSignal,
  ): Promise<WebFetchResult> {
    const { provider, maxBytes } = this.options
    const { res, req } = hop
    const contentType = String(res.headers['content-type'] ?? '')
    const declared = contentType.split(';')[0].trim().toLowerCase()
    if (declared && !contentTypeAllowed(declared, this.options.allowedContentTypes)) {
      res.resume()
      req.destroy()
      throw new WebError(
        'UNSUPPORTED_CONTENT_TYPE',
        `${url.href} is ${declared}, which web_fetch does not read (it reads text, HTML, JSON and XML).`,
        { provider, url: rawUrl, status: res.statusCode },
      )
    }
    const encoding = String(res.headers['content-encoding'] ?? '')
      .trim()
      .toLowerCase()
    let stream: Readable = res
    if (encoding === 'gzip' || encoding === 'x-gzip') stream = res.pipe(createGunzip())
    else if (encoding === 'deflate') stream = res.pipe(createInflate())
    else if (encoding === 'br') stream = res.pipe(createBrotliDecompress())
    const chunks: Buffer[] = []
    let size = 0
    let truncated = false
    try {
      for await (const chunk of stream) {
        const buf = chunk as Buffer
        if (size + buf.length > maxBytes) {
          chunks.push(buf.subarray(0, maxBytes - size))
          size = maxBytes
          truncated = true
          break
        }
        chunks.push(buf)
        size += buf.length
      }
    } catch (error) {
      if (signal.aborted) throw error
      throw new WebError(
        'TRANSPORT',
        `reading ${url.href} failed: ${(error as Error).message}.`,
        { provider, url: rawUrl },
        { cause: error },
      )
    } finally {
      if (truncated || signal.aborted) {
        res.destroy()
        req.destroy()
      }
    }
    const body = Buffer.concat(chunks)
    let mediaType = declared
    if (!mediaType) {
      // No Content-Type: text if the start holds no NUL byte.
      if (body.subarray(0, 4096).includes(0)) {
        throw new WebError(
          'UNSUPPORTED_CONTENT_TYPE',
          `${url.href} has no Content-Type and looks binary; web_fetch reads text only.`,
          { provider, url: rawUrl },
        )
      }
      mediaType = /^\s*<(!doctype html|html)/i.test(body.subarray(0, 512).toString('latin1'))
        ? 'text/html'
        : 'text/plain'
    }
    const wanted =
      charsetOf(contentType) ?? (mediaType.includes('html') ? sniffHtmlCharset(body) : undefined) ?? 'utf-8'
    const decoded = decode(body, wanted)
    let text = decoded.text
    if (truncated) text = text.replace(/\uFFFD+$/, '')
    return {
      provider,
      url: rawUrl,
      finalUrl: url.href,
      redirects,
      status: res.statusCode ?? 0,
      statusText: res.statusMessage ?? '',
      contentType,
      mediaType,
      charset: decoded.charset,
      content: text,
      bytes: size,
      truncated,
    }
  }
}
