// A scripted OpenAI/DeepSeek-compatible chat-completions server on loopback. Request N (counting
// only well-formed chat-completion requests) is answered by script step N.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  loadScript,
  validateScript,
  type MockEvent,
  type MockExpectation,
  type MockResponseStep,
  type MockScript,
  type MockStep,
  type MockToolCall,
  type MockUsage,
} from './script.ts'

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
  close(): Promise<void>
}

type Json = { [key: string]: unknown }

/** Starts the server; resolves once it listens. */
export async function startMockServer(options: MockServerOptions): Promise<MockServer> {
  const script = resolveScript(options)
  const basePath = (options.basePath ?? '/v1').replace(/\/+$/, '')
  const requests: RecordedRequest[] = []
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
    if (request.stream === true) await streamResponse(res, plan, request, abort, record)
    else await jsonResponse(res, plan, abort)
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

type Action =
  | { kind: 'delta'; delta: Json }
  | { kind: 'delay'; ms: number }
  | { kind: 'stall' }
  | { kind: 'comment'; text: string }
  | { kind: 'reset' }
  | { kind: 'raw'; text: string }
  | { kind: 'forever'; text?: string; comment?: string; empty?: true; frame?: string; intervalMs: number }

interface ToolAccumulator {
  index: number
  /** `null`: the call is sent without an id. */
  id: string | null
  name: string
  arguments: string
}

interface Plan {
  id: string
  model: string
  actions: Action[]
  content: string
  reasoning: string
  tools: ToolAccumulator[]
  finish: string | null
  usage: Json
  usageOn: 'trailing' | 'finish' | 'both'
  delayMs: number
  chunkDelayMs: number
  done: boolean
}

function splitEven(text: string, parts: number): string[] {
  if (parts <= 1 || text.length <= 1) return [text]
  const size = Math.ceil(text.length / parts)
  const out: string[] = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

function planResponse(step: MockResponseStep, stepIndex: number, request: Json): Plan {
  const events: MockEvent[] = step.events ?? [
    ...(step.reasoning !== undefined ? [{ reasoning: step.reasoning }] : []),
    ...(step.text !== undefined ? [{ text: step.text }] : []),
    ...(step.toolCalls ?? []).map((toolCall) => ({ toolCall })),
  ]
  const plan: Plan = {
    id: step.id ?? `chatcmpl-mock-${stepIndex}`,
    model: step.model ?? (request.model as string),
    actions: [],
    content: '',
    reasoning: '',
    tools: [],
    finish: null,
    usage: {},
    usageOn: step.usageOn ?? 'trailing',
    delayMs: step.delayMs ?? 0,
    chunkDelayMs: step.chunkDelayMs ?? 0,
    done: step.done ?? true,
  }
  let autoIndex = 0
  for (const event of events) {
    if ('text' in event) {
      plan.content += event.text
      plan.actions.push({ kind: 'delta', delta: { content: event.text } })
    } else if ('reasoning' in event) {
      plan.reasoning += event.reasoning
      plan.actions.push({ kind: 'delta', delta: { content: null, reasoning_content: event.reasoning } })
    } else if ('toolCall' in event) {
      const call: MockToolCall = event.toolCall
      const index = call.index ?? autoIndex
      autoIndex = Math.max(autoIndex, index + 1)
      const fragments = toolFragments(call)
      const tool: ToolAccumulator = {
        index,
        id: call.id === undefined ? `call_${stepIndex}_${index}` : call.id,
        name: call.name,
        arguments: fragments.join(''),
      }
      plan.tools.push(tool)
      plan.actions.push({
        kind: 'delta',
        delta: {
          tool_calls: [
            {
              index,
              ...(tool.id === null ? {} : { id: tool.id }),
              type: 'function',
              function: { name: call.name, arguments: '' },
            },
          ],
        },
      })
      for (const fragment of fragments) {
        plan.actions.push({ kind: 'delta', delta: { tool_calls: [{ index, function: { arguments: fragment } }] } })
      }
    } else if ('toolArgs' in event) {
      const tool = plan.tools.find((t) => t.index === event.toolArgs.index)
      if (tool) tool.arguments += event.toolArgs.arguments
      plan.actions.push({
        kind: 'delta',
        delta: { tool_calls: [{ index: event.toolArgs.index, function: { arguments: event.toolArgs.arguments } }] },
      })
    } else if ('delayMs' in event) plan.actions.push({ kind: 'delay', ms: event.delayMs })
    else if ('stall' in event) plan.actions.push({ kind: 'stall' })
    else if ('keepAlive' in event) plan.actions.push({ kind: 'comment', text: 'keep-alive' })
    else if ('reset' in event) plan.actions.push({ kind: 'reset' })
    else if ('frame' in event) plan.actions.push({ kind: 'raw', text: event.frame })
    else if ('forever' in event) {
      const f = event.forever
      plan.actions.push(
        f.text !== undefined
          ? { kind: 'forever', text: f.text, intervalMs: f.intervalMs ?? 0 }
          : f.empty
            ? { kind: 'forever', empty: true, intervalMs: f.intervalMs ?? 10 }
            : f.frame !== undefined
              ? { kind: 'forever', frame: f.frame, intervalMs: f.intervalMs ?? 10 }
              : { kind: 'forever', comment: 'keep-alive', intervalMs: f.intervalMs ?? 10 },
      )
    }
  }
  plan.finish = step.finish === undefined ? (plan.tools.length ? 'tool_calls' : 'stop') : step.finish
  plan.usage = wireUsage(step.usage, request, plan)
  return plan
}

function toolFragments(call: MockToolCall): string[] {
  const args = call.arguments
  if (Array.isArray(args)) return args
  const text = args === undefined ? '' : typeof args === 'string' ? args : JSON.stringify(args)
  if (text === '') return []
  return splitEven(text, call.split ?? 1)
}

const estimate = (text: string) => Math.ceil(text.length / 4)

function wireUsage(usage: MockUsage | undefined, request: Json, plan: Plan): Json {
  const reasoning = usage?.reasoning ?? estimate(plan.reasoning)
  const prompt = usage?.prompt ?? estimate(JSON.stringify(request.messages) + JSON.stringify(request.tools ?? ''))
  const completion =
    usage?.completion ?? reasoning + estimate(plan.content + plan.tools.map((t) => t.name + t.arguments).join(''))
  const hit = usage?.cacheHit ?? 0
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: hit },
    prompt_cache_hit_tokens: hit,
    prompt_cache_miss_tokens: prompt - hit,
    completion_tokens_details: { reasoning_tokens: reasoning },
  }
}

// ---- writing -------------------------------------------------------------------------------

async function streamResponse(
  res: ServerResponse,
  plan: Plan,
  request: Json,
  abort: AbortSignal,
  record: RecordedRequest,
): Promise<void> {
  const includeUsage = (request.stream_options as Json | undefined)?.include_usage === true
  const created = Math.floor(Date.now() / 1000)
  const frame = (choices: Json[], extra: Json = {}) =>
    `data: ${JSON.stringify({ id: plan.id, object: 'chat.completion.chunk', created, model: plan.model, system_fingerprint: 'fp_mock', choices, ...extra })}\n\n`
  const choice = (delta: Json, finish: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finish,
  })

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  })
  res.flushHeaders()
  if (plan.delayMs) await sleep(plan.delayMs, abort)

  const queue: Action[] = [{ kind: 'delta', delta: { role: 'assistant', content: '' } }, ...plan.actions]
  let first = true
  for (const action of queue) {
    if (abort.aborted) return
    if (action.kind === 'delay') {
      await sleep(action.ms, abort)
      continue
    }
    if (action.kind === 'stall') {
      await sleep(Infinity, abort)
      return
    }
    if (action.kind === 'reset') {
      res.socket?.resetAndDestroy?.() ?? res.destroy()
      return
    }
    if (action.kind === 'forever') {
      // Chunks that are valid JSON yet carry no content, reasoning, tool call, usage or finish.
      const empties = [frame([choice({})]), frame([choice({ content: '' })]), frame([])]
      let turn = 0
      const next = () =>
        action.text !== undefined
          ? frame([choice({ content: action.text })])
          : action.empty
            ? empties[turn++ % empties.length]
            : action.frame !== undefined
              ? action.frame
              : `: ${action.comment}\n\n`
      while (!abort.aborted) {
        await write(res, next(), record, abort)
        // Yield to the event loop even without a pause, so a disconnect is noticed.
        if (action.intervalMs > 0) await sleep(action.intervalMs, abort)
        else await new Promise((resolve) => setImmediate(resolve))
      }
      return
    }
    if (!first && plan.chunkDelayMs) await sleep(plan.chunkDelayMs, abort)
    first = false
    if (abort.aborted) return
    if (action.kind === 'comment') await write(res, `: ${action.text}\n\n`, record, abort)
    else if (action.kind === 'raw') await write(res, action.text, record, abort)
    else await write(res, frame([choice(action.delta)]), record, abort)
  }
  if (abort.aborted) return
  if (plan.finish !== null) {
    if (plan.chunkDelayMs) await sleep(plan.chunkDelayMs, abort)
    const usageHere = includeUsage && plan.usageOn !== 'trailing'
    await write(
      res,
      frame([choice({ content: '' }, plan.finish)], usageHere ? { usage: plan.usage } : {}),
      record,
      abort,
    )
  }
  if (includeUsage && plan.usageOn !== 'finish') await write(res, frame([], { usage: plan.usage }), record, abort)
  if (plan.done) await write(res, 'data: [DONE]\n\n', record, abort)
  if (!abort.aborted) res.end()
}

async function jsonResponse(res: ServerResponse, plan: Plan, abort: AbortSignal): Promise<void> {
  if (plan.delayMs) await sleep(plan.delayMs, abort)
  for (const action of plan.actions) {
    if (abort.aborted) return
    if (action.kind === 'delay') await sleep(action.ms, abort)
    else if (action.kind === 'stall') return void (await sleep(Infinity, abort))
    else if (action.kind === 'reset') return void (res.socket?.resetAndDestroy?.() ?? res.destroy())
    else if (action.kind === 'forever') return void (await sleep(Infinity, abort))
  }
  if (abort.aborted) return
  const message: Json = { role: 'assistant', content: plan.content }
  if (plan.reasoning) message.reasoning_content = plan.reasoning
  if (plan.tools.length) {
    message.tool_calls = [...plan.tools]
      .sort((a, b) => a.index - b.index)
      .map((t) => ({
        ...(t.id === null ? {} : { id: t.id }),
        type: 'function',
        function: { name: t.name, arguments: t.arguments },
      }))
  }
  sendJson(res, 200, {
    id: plan.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: plan.model,
    system_fingerprint: 'fp_mock',
    choices: [{ index: 0, message, logprobs: null, finish_reason: plan.finish }],
    usage: plan.usage,
  })
}

const ERROR_TYPES: { [status: number]: string } = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'insufficient_balance',
  403: 'permission_error',
  404: 'not_found',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'server_error',
  503: 'server_overloaded',
}

function errorBody(status: number, message: string, type?: string): Json {
  const t = type ?? ERROR_TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error')
  return { error: { message, type: t, param: null, code: t } }
}

function sendError(res: ServerResponse, status: number, message: string, type: string): void {
  sendJson(res, status, errorBody(status, message, type))
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

function looksJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

/** Writes `text`, counts it on `record`, and waits for the socket to drain when its buffer is full. */
async function write(res: ServerResponse, text: string, record: RecordedRequest, abort: AbortSignal): Promise<void> {
  if (abort.aborted) return
  record.bytesWritten += Buffer.byteLength(text)
  if (res.write(text)) return
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done)
      abort.removeEventListener('abort', done)
      resolve()
    }
    res.on('drain', done)
    abort.addEventListener('abort', done, { once: true })
  })
}

/** Aborted when the response closes before it finished (client gone or server closing). */
function closeSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  res.on('close', () => {
    if (!res.writableFinished) controller.abort()
  })
  return controller.signal
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      if (timer !== undefined) clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined
    signal.addEventListener('abort', done, { once: true })
  })
}
