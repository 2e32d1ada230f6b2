// The document of one running browser half, served at `/cordis-frame/<sessionId>/<name>/<hash>`.
// It holds two inline scripts, both allowed by hash and nothing else: the runner (below), which
// gives the code its `dsh` and speaks the message set to the page, and the approved code itself,
// wrapped as the body of `async function (dsh) {...}`. Its CSP sandboxes the document (an opaque
// origin even when opened outside the page's frame: no cookies, no storage, no same-origin reach),
// forbids every fetch (`connect-src 'none'`), form, base and plugin, and lets only this host's own
// pages frame it. node side: the page never builds it.
import { createHash } from 'node:crypto'
import { FRAME_PROTOCOL, MAX_HANDLER_CHARS, MAX_TEXT_CHARS } from './contract.ts'

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
