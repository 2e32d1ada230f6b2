// How the mock server answers a step: the step planned into chunks (text, reasoning, tool-call
// fragments, usage), streamed as server-sent events or sent as one JSON body, plus the plain
// HTTP helpers (error bodies, reading a request, writing with abort).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { MockEvent, MockResponseStep, MockToolCall, MockUsage } from './script.ts'
import type { RecordedRequest } from './server.ts'

type Json = { [key: string]: unknown }

type Action =
  | { kind: 'delta'; delta: Json }
  | { kind: 'delay'; ms: number }
  | { kind: 'stall' }
  | { kind: 'gate'; name: string }
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

export interface Plan {
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

export function planResponse(step: MockResponseStep, stepIndex: number, request: Json): Plan {
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
    else if ('gate' in event) plan.actions.push({ kind: 'gate', name: event.gate })
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

export async function streamResponse(
  res: ServerResponse,
  plan: Plan,
  request: Json,
  abort: AbortSignal,
  record: RecordedRequest,
  gates: Gates,
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
    if (action.kind === 'gate') {
      await gates.passed(action.name, abort)
      continue
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

export async function jsonResponse(res: ServerResponse, plan: Plan, abort: AbortSignal, gates: Gates): Promise<void> {
  if (plan.delayMs) await sleep(plan.delayMs, abort)
  for (const action of plan.actions) {
    if (abort.aborted) return
    if (action.kind === 'delay') await sleep(action.ms, abort)
    else if (action.kind === 'gate') await gates.passed(action.name, abort)
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

export function errorBody(status: number, message: string, type?: string): Json {
  const t = type ?? ERROR_TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error')
  return { error: { message, type: t, param: null, code: t } }
}

export function sendError(res: ServerResponse, status: number, message: string, type: string): void {
  sendJson(res, status, errorBody(status, message, type))
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

export function looksJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

/** Writes `text`, counts it on `record`, and waits for the socket to drain when its buffer is full. */
export async function write(
  res: ServerResponse,
  text: string,
  record: RecordedRequest,
  abort: AbortSignal,
): Promise<void> {
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
export function closeSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  res.on('close', () => {
    if (!res.writableFinished) controller.abort()
  })
  return controller.signal
}

/** The named gates of one server: `{gate}` events wait here until the test releases them. */
export class Gates {
  readonly #open = new Set<string>()
  readonly #waiting = new Map<string, Array<() => void>>()

  /** Opens `name` for good: responses waiting there go on, later ones pass at once. */
  release(name: string): void {
    this.#open.add(name)
    for (const resume of this.#waiting.get(name) ?? []) resume()
    this.#waiting.delete(name)
  }

  /** Resolves once `name` is released or `signal` aborts. */
  passed(name: string, signal: AbortSignal): Promise<void> {
    if (this.#open.has(name) || signal.aborted) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done)
        resolve()
      }
      signal.addEventListener('abort', done, { once: true })
      const list = this.#waiting.get(name) ?? []
      list.push(done)
      this.#waiting.set(name, list)
    })
  }
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
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
