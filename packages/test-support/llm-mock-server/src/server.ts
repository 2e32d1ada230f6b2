// A scripted OpenAI/DeepSeek-compatible chat-completions server on loopback. Request N (counting
// only well-formed chat-completion requests) is answered by script step N.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadScript, validateScript, type MockExpectation, type MockScript, type MockStep } from './script.ts'
import {
  closeSignal,
  errorBody,
  Gates,
  jsonResponse,
  looksJson,
  planResponse,
  readBody,
  sendError,
  sendJson,
  sleep,
  streamResponse,
  write,
} from './respond.ts'

export interface MockServerOptions {
  /** A script file path (JSON or YAML) or an inline script object. */
  script?: string | MockScript
  /** Inline steps (alternative to `script`). */
  steps?: MockStep[]
  /** Default 0 (an ephemeral port). */
  port?: number
  /** Default `127.0.0.1`. */
  host?: string
  /** Path prefix of the API; default `/v1`. `baseURL` = `url` + `basePath`. */
  basePath?: string
}

export type RequestOutcome = 'served' | 'expectation-failed' | 'exhausted' | 'invalid' | 'not-found'

export interface RecordedRequest {
  /** Arrival order across all requests, from 0. */
  index: number
  method: string
  path: string
  headers: { [name: string]: string | string[] | undefined }
  /** The parsed JSON body, or undefined when the body was empty or not JSON. */
  body: unknown
  rawBody: string
  /** The script step that answered it, when one did. */
  step?: number
  outcome: RequestOutcome
  /** True when the client disconnected before the response was complete. */
  aborted: boolean
  /** The client's port: requests that share it came over one kept-alive connection. */
  remotePort: number | undefined
  /** Body bytes handed to the socket for this request so far (headers excluded). */
  bytesWritten: number
}

export interface MockServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** `url` + basePath: what an adapter's `baseURL` should be. */
  readonly baseURL: string
  readonly port: number
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[]
  /** Steps answered so far. */
  readonly served: number
  /** Steps not yet answered. */
  readonly remaining: number
  /** Opens the `{gate: name}` events of the script: responses waiting there go on (see MockEvent). */
  release(name: string): void
  /**
   * Replaces the script (a file path, a script object or inline steps, validated as at start) and
   * starts its step count over: the next chat request is answered by step 0 of the new script.
   * Recorded requests stay; responses already under way finish with their old step. For one server
   * shared by several tests, each installing its own script (`setScript([])` clears it: every
   * request is then refused as exhausted).
   */
  setScript(script: string | MockScript | MockStep[]): void
  close(): Promise<void>
}

type Json = { [key: string]: unknown }

/** Starts the server; resolves once it listens. */
export async function startMockServer(options: MockServerOptions): Promise<MockServer> {
  let script = resolveScript(options)
  const basePath = (options.basePath ?? '/v1').replace(/\/+$/, '')
  const requests: RecordedRequest[] = []
  const gates = new Gates()
  let served = 0

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendError(res, 500, `llm-mock-server internal error: ${(error as Error).message}`, 'mock_internal_error')
      else res.destroy()
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req)
    const path = new URL(req.url ?? '/', 'http://mock').pathname
    let body: unknown
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined
    } catch {
      body = undefined
    }
    const record: RecordedRequest = {
      index: requests.length,
      method: req.method ?? 'GET',
      path,
      headers: { ...req.headers },
      body,
      rawBody,
      outcome: 'served',
      aborted: false,
      remotePort: req.socket.remotePort,
      bytesWritten: 0,
    }
    requests.push(record)
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true
    })

    if (req.method === 'GET' && path === `${basePath}/models`) {
      if (script.apiKey !== undefined && req.headers.authorization !== `Bearer ${script.apiKey}`)
        return sendError(res, 401, 'llm-mock-server: invalid API key', 'invalid_api_key')
      const models = script.models ?? ['deepseek-v4-flash']
      return sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', owned_by: 'llm-mock-server' })),
      })
    }
    if (req.method !== 'POST' || path !== `${basePath}/chat/completions`) {
      record.outcome = 'not-found'
      return sendError(
        res,
        404,
        `llm-mock-server: no route for ${req.method} ${path}; serving POST ${basePath}/chat/completions and GET ${basePath}/models`,
        'not_found',
      )
    }
    const invalid = checkRequest(rawBody, body)
    if (invalid) {
      record.outcome = 'invalid'
      return sendError(res, 400, `llm-mock-server: ${invalid}`, 'invalid_request_error')
    }
    const request = body as Json
    if (served >= script.steps.length) {
      record.outcome = 'exhausted'
      return sendError(
        res,
        500,
        `llm-mock-server: script exhausted: request ${served + 1} arrived but the script has ${script.steps.length} step${script.steps.length === 1 ? '' : 's'}`,
        'mock_script_exhausted',
      )
    }
    const stepIndex = served++
    const step = script.steps[stepIndex]
    record.step = stepIndex
    const label = `steps[${stepIndex}]${step.label ? ` (${step.label})` : ''}`
    const mismatch = step.expect ? checkExpectation(step.expect, request) : []
    if (mismatch.length) {
      record.outcome = 'expectation-failed'
      return sendError(
        res,
        400,
        `llm-mock-server: ${label} expectation failed: ${mismatch.join('; ')}`,
        'mock_expectation_failed',
      )
    }
    const abort = closeSignal(res)
    if ('error' in step) {
      const e = step.error
      if (e.delayMs) await sleep(e.delayMs, abort)
      if (abort.aborted) return
      const headers: { [name: string]: string } = { ...e.headers }
      if (e.retryAfter !== undefined) headers['retry-after'] = String(e.retryAfter)
      if (typeof e.body === 'string') {
        res.writeHead(e.status, {
          'content-type': looksJson(e.body) ? 'application/json' : 'text/plain; charset=utf-8',
          ...headers,
        })
        res.end(e.body)
        return
      }
      const message = e.message ?? `mock error ${e.status} from ${label}`
      const payload =
        e.body ??
        errorBody(e.status, e.echoHeaders ? `${message}; request headers: ${JSON.stringify(req.headers)}` : message)
      res.writeHead(e.status, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify(payload))
      return
    }
    if ('raw' in step) {
      const r = step.raw
      res.writeHead(r.status ?? 200, { 'content-type': r.contentType ?? 'text/plain; charset=utf-8', ...r.headers })
      for (let i = 0; i < (r.repeat ?? 1) && !abort.aborted; i++) await write(res, r.body, record, abort)
      if (!abort.aborted) res.end()
      return
    }
    const plan = planResponse(step, stepIndex, request)
    if (request.stream === true) await streamResponse(res, plan, request, abort, record, gates)
    else await jsonResponse(res, plan, abort, gates)
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const url = `http://${host}:${address.port}`
  let closing: Promise<void> | undefined

  return {
    url,
    baseURL: url + basePath,
    port: address.port,
    requests,
    get served() {
      return served
    },
    get remaining() {
      return script.steps.length - served
    },
    release(name: string) {
      gates.release(name)
    },
    setScript(next) {
      script = Array.isArray(next) ? resolveScript({ steps: next }) : resolveScript({ script: next })
      served = 0
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closing
    },
  }
}

function resolveScript(options: MockServerOptions): MockScript {
  if (options.script !== undefined && options.steps !== undefined) {
    throw new TypeError('startMockServer: pass either script or steps, not both')
  }
  if (typeof options.script === 'string') return loadScript(options.script)
  if (options.script !== undefined) return validateScript(options.script)
  if (options.steps !== undefined) return validateScript({ steps: options.steps })
  throw new TypeError('startMockServer: pass script (a file path or object) or steps')
}

function checkRequest(rawBody: string, body: unknown): string | undefined {
  if (!rawBody) return 'request body is empty; expected a JSON chat completion request'
  if (body === undefined) return 'request body is not valid JSON'
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'request body must be a JSON object'
  const b = body as Json
  if (typeof b.model !== 'string' || b.model === '') return "request field 'model' must be a non-empty string"
  if (!Array.isArray(b.messages) || b.messages.length === 0) return "request field 'messages' must be a non-empty array"
  return undefined
}

function messageText(message: unknown): string {
  if (!message || typeof message !== 'object') return ''
  const m = message as Json
  const parts: string[] = []
  if (typeof m.content === 'string') parts.push(m.content)
  else if (Array.isArray(m.content)) {
    for (const part of m.content)
      if (part && typeof (part as Json).text === 'string') parts.push((part as Json).text as string)
  }
  if (typeof m.reasoning_content === 'string') parts.push(m.reasoning_content)
  if (Array.isArray(m.tool_calls)) {
    for (const call of m.tool_calls) {
      const fn = (call as Json)?.function as Json | undefined
      if (fn && typeof fn.arguments === 'string') parts.push(fn.arguments)
    }
  }
  return parts.join('\n')
}

function checkExpectation(expect: MockExpectation, request: Json): string[] {
  const problems: string[] = []
  const messages = request.messages as Json[]
  const last = messages[messages.length - 1]
  if (expect.model !== undefined && request.model !== expect.model) {
    problems.push(`model is ${JSON.stringify(request.model)}, expected ${JSON.stringify(expect.model)}`)
  }
  if (expect.lastRole !== undefined && last?.role !== expect.lastRole) {
    problems.push(`last message role is ${JSON.stringify(last?.role)}, expected ${JSON.stringify(expect.lastRole)}`)
  }
  if (expect.lastContains !== undefined) {
    const text = messageText(last)
    if (!text.includes(expect.lastContains)) {
      const shown = text.length > 80 ? `${text.slice(0, 80)}...` : text
      problems.push(
        `last message does not contain ${JSON.stringify(expect.lastContains)} (it reads ${JSON.stringify(shown)})`,
      )
    }
  }
  if (expect.systemContains !== undefined) {
    const system = messages
      .filter((m) => m?.role === 'system')
      .map(messageText)
      .join('\n')
    if (!system.includes(expect.systemContains))
      problems.push(`no system message contains ${JSON.stringify(expect.systemContains)}`)
  }
  if (expect.messageCount !== undefined && messages.length !== expect.messageCount) {
    problems.push(`request has ${messages.length} messages, expected ${expect.messageCount}`)
  }
  if (expect.stream !== undefined && (request.stream === true) !== expect.stream) {
    problems.push(`request stream is ${request.stream === true}, expected ${expect.stream}`)
  }
  if (expect.tools !== undefined) {
    const offered = Array.isArray(request.tools)
      ? (request.tools as Json[])
          .map((t) => (t?.function as Json | undefined)?.name)
          .filter((n): n is string => typeof n === 'string')
      : []
    const missing = expect.tools.filter((name) => !offered.includes(name))
    if (missing.length)
      problems.push(`tools ${missing.join(', ')} not offered (offered: ${offered.join(', ') || 'none'})`)
  }
  return problems
}

// ---- response planning -------------------------------------------------------------------
