// @dsh/cordis-client-runner (host half): the run round trip of the browser halves of model-written
// plugins (@dsh/cordis-host-runner). It serves each running browser half as its own sandboxed
// document at `/cordis-frame/<sessionId>/<name>/<hash>` (frameDocument below), lets the page frame that
// route (`frame-src 'self'` through ctx.frontendStatic), forwards the runner's request-run, retract
// and browser-invoke events to the pages on the host stream, and takes the pages' reports
// (`cordis.browserReport`) back to the runner. The browser half (`./client`) puts the frames in the
// side panel and checks every message they send.
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import { type BrowserReport, type Definition, RunnerError } from '@dsh/cordis-host-runner'
import { sendError, type RequestInfo } from '@dsh/webserver'
import type {} from '@dsh/api-gateway'
import type {} from '@dsh/frontend-static'
import {
  type BrowserHalf,
  cordisBrowserHalves,
  cordisBrowserReport,
  FRAME_PREFIX,
  FRAME_PROTOCOL,
  frameUrl,
  INVOKE,
  MAX_HANDLER_CHARS,
  MAX_TEXT_CHARS,
  REQUEST_RUN,
  RETRACTED,
  type ReportParams,
} from './contract.ts'

export * from './contract.ts'

// The frame document of one running browser half, served at `/cordis-frame/<sessionId>/<name>/<hash>`.
// It holds two inline scripts, both allowed by hash and nothing else: the runner (below), which
// gives the code its `dsh` and speaks the message set to the page, and the approved code itself,
// wrapped as the body of `async function (dsh) {...}`. Its CSP sandboxes the document (an opaque
// origin even when opened outside the page's frame: no cookies, no storage, no same-origin reach),
// forbids every fetch (`connect-src 'none'`), form, base and plugin, and lets only this host's own
// pages frame it.

/**
 * The runner inside the frame. It is no security boundary (the model's code shares its realm and
 * may post whatever it likes): the sandbox and the CSP confine the frame, and the page validates
 * every message. It only makes the honest path easy.
 */
export const FRAME_RUNNER = `(function () {
  'use strict'
  var P = ${JSON.stringify(FRAME_PROTOCOL)}
  var post = function (m) { m.protocol = P; try { window.parent.postMessage(m, '*') } catch (e) {} }
  var describe = function (e) { return String(e && e.message !== undefined ? e.message : e).slice(0, ${MAX_TEXT_CHARS}) }
  var show = function (v) { if (typeof v === 'string') return v; try { return JSON.stringify(v) } catch (e) { return String(v) } }
  var handlers = new Map()
  var started = false
  var dsh = Object.freeze({
    root: document.getElementById('root'),
    log: function () {
      post({ kind: 'log', text: Array.prototype.map.call(arguments, show).join(' ').slice(0, ${MAX_TEXT_CHARS}) })
    },
    handle: function (name, fn) {
      if (typeof name !== 'string' || !name || name.length > ${MAX_HANDLER_CHARS}) throw new TypeError('dsh.handle(name, fn): name must be a string of 1-${MAX_HANDLER_CHARS} characters')
      if (typeof fn !== 'function') throw new TypeError('dsh.handle(name, fn): fn must be a function')
      handlers.set(name, fn)
      post({ kind: 'handle', handler: name })
    },
  })
  window.addEventListener('error', function (event) {
    var why = describe(event.error || event.message)
    if (!started) { started = true; post({ kind: 'failed', error: why }) }
    else post({ kind: 'log', text: ('uncaught: ' + why).slice(0, ${MAX_TEXT_CHARS}) })
  })
  window.addEventListener('message', function (event) {
    if (event.source !== window.parent) return
    var m = event.data
    if (!m || m.protocol !== P || m.kind !== 'invoke' || typeof m.id !== 'number' || typeof m.handler !== 'string') return
    var fn = handlers.get(m.handler)
    if (!fn) { post({ kind: 'result', id: m.id, error: 'the browser half has no handler ' + JSON.stringify(m.handler) }); return }
    new Promise(function (resolve) { resolve(fn(m.input)) }).then(function (value) {
      var copy
      try { copy = JSON.parse(JSON.stringify(value === undefined ? null : value)) } catch (e) { post({ kind: 'result', id: m.id, error: 'the result is not JSON: ' + describe(e) }); return }
      post({ kind: 'result', id: m.id, value: copy })
    }, function (e) { post({ kind: 'result', id: m.id, error: describe(e) }) })
  })
  window.__dshStart = function (body) {
    if (started) return
    started = true
    new Promise(function (resolve) { resolve(body(dsh)) }).then(
      function () { post({ kind: 'started' }) },
      function (e) { post({ kind: 'failed', error: describe(e) }) })
  }
  document.addEventListener('DOMContentLoaded', function () {
    if (!started) { started = true; post({ kind: 'failed', error: 'the browser code did not start' }) }
  })
})()`

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`

const STYLE = 'body{margin:0;padding:6px;font:13px system-ui,sans-serif;color:#222;background:#fff}'

/** The frame's document and its Content-Security-Policy for the approved browser code. */
export function frameDocument(code: string, title: string): { html: string; csp: string } {
  // The definition refused "</script" and "<!--" in the code, so it cannot leave its element.
  const start = `__dshStart(async function (dsh) { 'use strict';\n${code}\n})`
  const escapeHtml = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><div id="root"></div>
<script>${FRAME_RUNNER}</script>
<script>${start}</script>
</body></html>`
  const csp = [
    "default-src 'none'",
    `script-src ${sha256(FRAME_RUNNER)} ${sha256(start)}`,
    "style-src 'unsafe-inline'",
    'img-src data: blob:',
    'font-src data:',
    "connect-src 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'",
    'sandbox allow-scripts',
  ].join('; ')
  return { html, csp }
}

export const name = '@dsh/cordis-client-runner'
export const inject = ['dynamicCordisRunner', 'webServer']
export type Config = Record<string, never>
export const Config: Schema<Config> = Schema.object({}) as Schema<Config>

const STATUS: Record<string, number> = { UNKNOWN_DEFINITION: 404, NOT_RUNNING: 409, INVALID_REPORT: 400 }

const half = (d: Readonly<Definition>): BrowserHalf => ({
  name: d.name,
  hash: d.hash,
  url: frameUrl(d.sessionId!, d.name, d.hash),
  state: d.browserState ?? 'waiting',
})

function toReport(p: ReportParams): BrowserReport {
  const need = <T>(value: T | undefined, field: string): T => {
    if (value === undefined) throw new ApiError('INVALID_PARAMS', `a ${p.kind} report needs ${field}`, { field })
    return value
  }
  switch (p.kind) {
    case 'started':
      return { kind: 'started' }
    case 'failed':
      return { kind: 'failed', error: need(p.error, 'error') }
    case 'log':
      return { kind: 'log', text: need(p.text, 'text') }
    case 'handle':
      return { kind: 'handle', handler: need(p.handler, 'handler') }
    case 'result':
      return {
        kind: 'result',
        id: need(p.id, 'id'),
        ...(p.error !== undefined ? { error: p.error } : { value: p.value ?? null }),
      }
  }
}

export function apply(ctx: Context): void {
  const runner = ctx.dynamicCordisRunner
  const running = (d: Readonly<Definition> | undefined): d is Readonly<Definition> =>
    !!d && d.state === 'running' && !!d.browser && d.sessionId !== undefined

  const serveFrame = (req: IncomingMessage, res: ServerResponse, info: RequestInfo) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} ${info.url.pathname}: the frame answers GET and HEAD`)
      return
    }
    const parts = info.url.pathname.slice(FRAME_PREFIX.length + 1).split('/')
    let sessionId = ''
    let pluginName = ''
    try {
      sessionId = decodeURIComponent(parts[0] ?? '')
      pluginName = decodeURIComponent(parts[1] ?? '')
    } catch {
      // an undecodable path names no definition
    }
    const d = parts.length === 3 && sessionId ? runner.get(pluginName, sessionId) : undefined
    // Only approved, running code is ever served, and only the exact code the user approved.
    if (!running(d) || d.hash !== parts[2]) {
      sendError(res, 404, 'NOT_FOUND', 'no running browser half at this address')
      return
    }
    const { html, csp } = frameDocument(d.browser!, `dsh plugin ${d.name}`)
    const body = Buffer.from(html, 'utf8')
    // This one document may be framed (by this host's pages: frame-ancestors 'self'); it replaces
    // the resource CSP and X-Frame-Options DENY the webserver put on every response.
    res.removeHeader('x-frame-options')
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-length': body.length,
      'cache-control': 'no-store',
      'content-security-policy': csp,
      'cross-origin-opener-policy': 'same-origin',
    })
    res.end(req.method === 'HEAD' ? undefined : body)
  }
  ctx.webServer.register({ path: FRAME_PREFIX, match: 'prefix', handle: serveFrame })

  // The page's own CSP frames nothing by default; it may frame this host's documents while this
  // row is on. Every other response of the host says frame-ancestors 'none', so 'self' reaches only
  // the frame documents above.
  ctx.inject(['frontendStatic'], (inner) => {
    inner.frontendStatic.allowFrames("'self'")
  })

  ctx.inject(['api'], (inner) => {
    const coded = <T>(run: () => T): T => {
      try {
        return run()
      } catch (error) {
        if (error instanceof RunnerError)
          throw new ApiError(error.code, error.message, { status: STATUS[error.code] ?? 400, field: 'name' })
        throw error
      }
    }
    inner.api.register(cordisBrowserHalves, (p) => ({
      halves: runner.list(p.sessionId).filter(running).map(half),
    }))
    inner.api.register(cordisBrowserReport, (p) =>
      coded(() => {
        runner.browserReport(p.name, p.sessionId, p.hash, toReport(p))
        return {}
      }),
    )
    inner.on('dynamicCordisRunner/request-run', (d) => {
      if (running(d)) inner.api.publishHost({ type: REQUEST_RUN, sessionId: d.sessionId!, ...half(d) })
    })
    inner.on('dynamicCordisRunner/retract', (d, reason) => {
      if (d.browser && d.sessionId !== undefined)
        inner.api.publishHost({ type: RETRACTED, sessionId: d.sessionId, name: d.name, reason })
    })
    inner.on('dynamicCordisRunner/browser-invoke', (d, call) => {
      if (running(d))
        inner.api.publishHost({
          type: INVOKE,
          sessionId: d.sessionId!,
          name: d.name,
          hash: d.hash,
          id: call.id,
          handler: call.handler,
          input: call.input,
        })
    })
  })
}

export default { name, inject, Config, apply }
