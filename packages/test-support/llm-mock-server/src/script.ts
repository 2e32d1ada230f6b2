// The script vocabulary of the mock server and its validator. A script is an ordered list of
// steps; request N is answered by step N. Validation errors name the source and the JSON path.
import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'

/** Finish reasons as they appear on the OpenAI/DeepSeek wire. */
export type WireFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'insufficient_system_resource'
export const WIRE_FINISH_REASONS: readonly WireFinishReason[] = [
  'stop',
  'length',
  'tool_calls',
  'content_filter',
  'insufficient_system_resource',
]

export interface MockToolCall {
  /** Defaults to `call_<step>_<index>`; `null` sends the call without an `id` (a provider that names none). */
  id?: string | null
  name: string
  /** A JSON string sent verbatim (may be malformed on purpose), an object to stringify, or explicit fragments. */
  arguments?: string | { [key: string]: unknown } | string[]
  /** Split a string `arguments` into this many fragments (one frame each). Default 1. */
  split?: number
  /** Wire `index`; defaults to the order of appearance within the step. */
  index?: number
}

export type MockEvent =
  | { text: string }
  | { reasoning: string }
  | { toolCall: MockToolCall }
  /** More argument fragments for a tool call already started in this step (interleaving). */
  | { toolArgs: { index: number; arguments: string } }
  | { delayMs: number }
  /** Send nothing more until the client disconnects. */
  | { stall: true }
  /**
   * Send nothing more until the test calls `release(name)` on the in-process server (a gate
   * released before the response reaches it passes at once), or the client disconnects. For a
   * test that must see the response half-way, whatever the machine's speed.
   */
  | { gate: string }
  /** An SSE comment line `: keep-alive`. */
  | { keepAlive: true }
  /** Destroy the socket (connection reset mid-stream). */
  | { reset: true }
  /** Raw text written to the body as-is (e.g. a malformed `data:` line). */
  | { frame: string }
  /**
   * Never ends: repeats a text delta, a `: keep-alive` comment, (`empty`) a `data:` chunk that
   * carries nothing (an empty delta, an empty content string, an empty choices list, in turn) or
   * a raw `frame` until the client disconnects, pausing `intervalMs` (default 0 for text, 10
   * otherwise) between writes and honouring backpressure. Later events are never reached.
   */
  | { forever: { text?: string; keepAlive?: true; empty?: true; frame?: string; intervalMs?: number } }

export interface MockUsage {
  /** Wire `prompt_tokens` (includes cache hits). */
  prompt?: number
  /** Wire `completion_tokens` (includes reasoning tokens). */
  completion?: number
  /** Wire `prompt_cache_hit_tokens`; miss = prompt - hit. */
  cacheHit?: number
  /** Wire `completion_tokens_details.reasoning_tokens`. */
  reasoning?: number
}

export interface MockExpectation {
  model?: string
  /** Role of the last message: system, user, assistant or tool. */
  lastRole?: string
  /** Substring of the last message's text (string content, text parts, tool call arguments). */
  lastContains?: string
  /** Substring of the system message(s). */
  systemContains?: string
  /** Tool names that must be offered in `tools`. */
  tools?: string[]
  messageCount?: number
  stream?: boolean
}

interface StepBase {
  /** Free text shown in error messages. */
  label?: string
  expect?: MockExpectation
}

export interface MockResponseStep extends StepBase {
  /** Shorthand, emitted in this order: reasoning, text, toolCalls. Not combinable with `events`. */
  reasoning?: string
  text?: string
  toolCalls?: MockToolCall[]
  events?: MockEvent[]
  /** Omitted: computed from the request and response sizes (4 characters a token). */
  usage?: MockUsage
  /** Where usage goes when the request sets `stream_options.include_usage`. Default `trailing`. */
  usageOn?: 'trailing' | 'finish' | 'both'
  /** Default: `tool_calls` when the step has tool calls, else `stop`; `null` sends no finish frame. */
  finish?: WireFinishReason | null
  /** Pause before the first frame (headers are already sent). */
  delayMs?: number
  /** Pause between frames. */
  chunkDelayMs?: number
  /** Send `data: [DONE]` at the end. Default true. */
  done?: boolean
  /** `model` field of the frames; default the request's model. */
  model?: string
  /** Completion id; default `chatcmpl-mock-<step>`. */
  id?: string
}

export interface MockErrorStep extends StepBase {
  error: {
    status: number
    /** Default: an OpenAI-style `{error: {message, type, code}}` for the status. */
    body?: string | { [key: string]: unknown }
    message?: string
    /** Seconds (number) or an HTTP date (string), sent as `Retry-After`. */
    retryAfter?: number | string
    headers?: { [name: string]: string }
    delayMs?: number
    /** Append the request's headers (Authorization included) to the message, as a careless proxy might. */
    echoHeaders?: boolean
  }
}

export interface MockRawStep extends StepBase {
  raw: {
    status?: number
    contentType?: string
    body: string
    headers?: { [name: string]: string }
    /** Send `body` this many times in a row (streamed with backpressure, never built in memory). Default 1. */
    repeat?: number
  }
}

export type MockStep = MockResponseStep | MockErrorStep | MockRawStep

export interface MockScript {
  /** Ids listed by `GET /models`. Default `['deepseek-v4-flash']`. */
  models?: string[]
  /**
   * When set, `GET /models` answers 401 unless the request carries `Authorization: Bearer <apiKey>`
   * (a key check, as a provider does). Chat requests are not checked. Default: any key passes.
   */
  apiKey?: string
  steps: MockStep[]
}

export class MockScriptError extends Error {
  override name = 'MockScriptError'
  constructor(
    readonly source: string,
    readonly path: string,
    readonly detail: string,
  ) {
    super(`${source}: ${path ? `${path}: ` : ''}${detail}`)
  }
}

const EVENT_KEYS = [
  'text',
  'reasoning',
  'toolCall',
  'toolArgs',
  'delayMs',
  'stall',
  'gate',
  'keepAlive',
  'reset',
  'frame',
  'forever',
] as const
const RESPONSE_KEYS = [
  'label',
  'expect',
  'reasoning',
  'text',
  'toolCalls',
  'events',
  'usage',
  'usageOn',
  'finish',
  'delayMs',
  'chunkDelayMs',
  'done',
  'model',
  'id',
]
const EXPECT_KEYS = ['model', 'lastRole', 'lastContains', 'systemContains', 'tools', 'messageCount', 'stream']
const USAGE_KEYS = ['prompt', 'completion', 'cacheHit', 'reasoning']
const TOOL_KEYS = ['id', 'name', 'arguments', 'split', 'index']

type Obj = { [key: string]: unknown }

class Checker {
  constructor(readonly source: string) {}
  fail(path: string, detail: string): never {
    throw new MockScriptError(this.source, path, detail)
  }
  object(value: unknown, path: string): Obj {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      this.fail(path, `expected an object, got ${describe(value)}`)
    return value as Obj
  }
  keys(value: Obj, path: string, allowed: readonly string[]): void {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) this.fail(path, `unknown field '${key}'; expected one of: ${allowed.join(', ')}`)
    }
  }
  string(value: unknown, path: string): string {
    if (typeof value !== 'string') this.fail(path, `expected a string, got ${describe(value)}`)
    return value
  }
  natural(value: unknown, path: string): number {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
      this.fail(path, `expected a non-negative integer, got ${describe(value)}`)
    }
    return value
  }
  optional<T>(obj: Obj, key: string, path: string, check: (v: unknown, p: string) => T): void {
    if (obj[key] !== undefined) check(obj[key], `${path}.${key}`)
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing (the field is missing)'
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '...' : value)}`
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`
}

/** Validates an already parsed script (a `{steps}` object or a bare step array). */
export function validateScript(input: unknown, source = '<inline script>'): MockScript {
  const c: Checker = new Checker(source)
  const script: Obj = Array.isArray(input) ? { steps: input } : c.object(input, '')
  c.keys(script, '', ['models', 'apiKey', 'steps'])
  if (script.apiKey !== undefined) c.string(script.apiKey, 'apiKey')
  if (!Array.isArray(script.steps)) c.fail('steps', `expected an array of steps, got ${describe(script.steps)}`)
  if (script.models !== undefined) {
    if (!Array.isArray(script.models))
      c.fail('models', `expected an array of model ids, got ${describe(script.models)}`)
    script.models.forEach((m, i) => {
      c.string(m, `models[${i}]`)
    })
  }
  script.steps.forEach((step, i) => {
    validateStep(c, step, `steps[${i}]`)
  })
  return script as unknown as MockScript
}

function validateStep(c: Checker, value: unknown, path: string): void {
  const step = c.object(value, path)
  c.optional(step, 'label', path, (v, p) => c.string(v, p))
  if (step.expect !== undefined) validateExpect(c, step.expect, `${path}.expect`)
  if ('error' in step) {
    c.keys(step, path, ['label', 'expect', 'error'])
    const e = c.object(step.error, `${path}.error`)
    c.keys(e, `${path}.error`, ['status', 'body', 'message', 'retryAfter', 'headers', 'delayMs', 'echoHeaders'])
    if (e.echoHeaders !== undefined && typeof e.echoHeaders !== 'boolean')
      c.fail(`${path}.error.echoHeaders`, `expected a boolean, got ${describe(e.echoHeaders)}`)
    if (e.echoHeaders && e.body !== undefined)
      c.fail(`${path}.error.echoHeaders`, 'echoHeaders applies to the default body, not to an explicit body')
    const status = c.natural(e.status, `${path}.error.status`)
    if (status < 400 || status > 599)
      c.fail(`${path}.error.status`, `expected an HTTP error status 400-599, got ${status}`)
    if (e.body !== undefined && typeof e.body !== 'string') c.object(e.body, `${path}.error.body`)
    c.optional(e, 'message', `${path}.error`, (v, p) => c.string(v, p))
    if (e.retryAfter !== undefined && typeof e.retryAfter !== 'string')
      c.natural(e.retryAfter, `${path}.error.retryAfter`)
    if (e.headers !== undefined) validateHeaders(c, e.headers, `${path}.error.headers`)
    c.optional(e, 'delayMs', `${path}.error`, (v, p) => c.natural(v, p))
    return
  }
  if ('raw' in step) {
    c.keys(step, path, ['label', 'expect', 'raw'])
    const r = c.object(step.raw, `${path}.raw`)
    c.keys(r, `${path}.raw`, ['status', 'contentType', 'body', 'headers', 'repeat'])
    if (r.repeat !== undefined && c.natural(r.repeat, `${path}.raw.repeat`) < 1)
      c.fail(`${path}.raw.repeat`, 'expected at least 1')
    c.string(r.body, `${path}.raw.body`)
    c.optional(r, 'status', `${path}.raw`, (v, p) => c.natural(v, p))
    c.optional(r, 'contentType', `${path}.raw`, (v, p) => c.string(v, p))
    if (r.headers !== undefined) validateHeaders(c, r.headers, `${path}.raw.headers`)
    return
  }
  c.keys(step, path, RESPONSE_KEYS)
  const shorthand = ['reasoning', 'text', 'toolCalls'].filter((k) => step[k] !== undefined)
  if (step.events !== undefined && shorthand.length) {
    c.fail(path, `use either 'events' or the shorthand fields (${shorthand.join(', ')}), not both`)
  }
  c.optional(step, 'reasoning', path, (v, p) => c.string(v, p))
  c.optional(step, 'text', path, (v, p) => c.string(v, p))
  if (step.toolCalls !== undefined) {
    if (!Array.isArray(step.toolCalls))
      c.fail(`${path}.toolCalls`, `expected an array, got ${describe(step.toolCalls)}`)
    step.toolCalls.forEach((t, i) => {
      validateToolCall(c, t, `${path}.toolCalls[${i}]`)
    })
  }
  if (step.events !== undefined) {
    if (!Array.isArray(step.events)) c.fail(`${path}.events`, `expected an array, got ${describe(step.events)}`)
    const started = new Set<number>()
    let auto = 0
    step.events.forEach((event, i) => {
      const p = `${path}.events[${i}]`
      const e = c.object(event, p)
      const keys = Object.keys(e)
      if (keys.length !== 1 || !(EVENT_KEYS as readonly string[]).includes(keys[0])) {
        c.fail(
          p,
          `an event has exactly one of the keys ${EVENT_KEYS.join(', ')}; got ${keys.length ? keys.join(', ') : 'none'}`,
        )
      }
      const key = keys[0]
      const v = e[key]
      const q = `${p}.${key}`
      switch (key) {
        case 'text':
        case 'reasoning':
        case 'frame':
          c.string(v, q)
          break
        case 'gate':
          if (c.string(v, q) === '') c.fail(q, 'expected a non-empty gate name')
          break
        case 'delayMs':
          c.natural(v, q)
          break
        case 'forever': {
          const f = c.object(v, q)
          c.keys(f, q, ['text', 'keepAlive', 'empty', 'frame', 'intervalMs'])
          if ([f.text, f.keepAlive, f.empty, f.frame].filter((x) => x !== undefined).length !== 1)
            c.fail(q, 'expected exactly one of text, keepAlive, empty or frame')
          if (f.frame !== undefined && c.string(f.frame, `${q}.frame`) === '')
            c.fail(`${q}.frame`, 'expected a non-empty string')
          if (f.text !== undefined && c.string(f.text, `${q}.text`) === '')
            c.fail(`${q}.text`, 'expected a non-empty string')
          if (f.keepAlive !== undefined && f.keepAlive !== true)
            c.fail(`${q}.keepAlive`, `expected true, got ${describe(f.keepAlive)}`)
          if (f.empty !== undefined && f.empty !== true) c.fail(`${q}.empty`, `expected true, got ${describe(f.empty)}`)
          c.optional(f, 'intervalMs', q, (x, y) => c.natural(x, y))
          break
        }
        case 'stall':
        case 'keepAlive':
        case 'reset':
          if (v !== true) c.fail(q, `expected true, got ${describe(v)}`)
          break
        case 'toolCall': {
          const t = validateToolCall(c, v, q)
          const index = t.index ?? auto
          if (started.has(index)) c.fail(q, `tool call index ${index} is already used in this step`)
          started.add(index)
          auto = Math.max(auto, index + 1)
          break
        }
        case 'toolArgs': {
          const a = c.object(v, q)
          c.keys(a, q, ['index', 'arguments'])
          const index = c.natural(a.index, `${q}.index`)
          c.string(a.arguments, `${q}.arguments`)
          if (!started.has(index))
            c.fail(`${q}.index`, `no tool call with index ${index} was started earlier in this step`)
          break
        }
      }
    })
  }
  if (step.usage !== undefined) {
    const u = c.object(step.usage, `${path}.usage`)
    c.keys(u, `${path}.usage`, USAGE_KEYS)
    for (const k of USAGE_KEYS) c.optional(u, k, `${path}.usage`, (v, p) => c.natural(v, p))
    if (typeof u.cacheHit === 'number' && typeof u.prompt === 'number' && u.cacheHit > u.prompt) {
      c.fail(`${path}.usage.cacheHit`, `cacheHit (${u.cacheHit}) exceeds prompt (${u.prompt})`)
    }
  }
  if (step.usageOn !== undefined && !['trailing', 'finish', 'both'].includes(step.usageOn as string)) {
    c.fail(`${path}.usageOn`, `expected trailing, finish or both, got ${describe(step.usageOn)}`)
  }
  if (
    step.finish !== undefined &&
    step.finish !== null &&
    !WIRE_FINISH_REASONS.includes(step.finish as WireFinishReason)
  ) {
    c.fail(`${path}.finish`, `expected one of ${WIRE_FINISH_REASONS.join(', ')} or null, got ${describe(step.finish)}`)
  }
  c.optional(step, 'delayMs', path, (v, p) => c.natural(v, p))
  c.optional(step, 'chunkDelayMs', path, (v, p) => c.natural(v, p))
  if (step.done !== undefined && typeof step.done !== 'boolean')
    c.fail(`${path}.done`, `expected a boolean, got ${describe(step.done)}`)
  c.optional(step, 'model', path, (v, p) => c.string(v, p))
  c.optional(step, 'id', path, (v, p) => c.string(v, p))
}

function validateToolCall(c: Checker, value: unknown, path: string): MockToolCall {
  const t = c.object(value, path)
  c.keys(t, path, TOOL_KEYS)
  c.string(t.name, `${path}.name`)
  if (t.id !== null) c.optional(t, 'id', path, (v, p) => c.string(v, p))
  c.optional(t, 'index', path, (v, p) => c.natural(v, p))
  if (t.split !== undefined && c.natural(t.split, `${path}.split`) < 1) c.fail(`${path}.split`, 'expected at least 1')
  const args = t.arguments
  if (Array.isArray(args)) {
    args.forEach((a, i) => {
      c.string(a, `${path}.arguments[${i}]`)
    })
    if (t.split !== undefined) c.fail(`${path}.split`, 'split applies to a string arguments, not to explicit fragments')
  } else if (args !== undefined && typeof args !== 'string') {
    c.object(args, `${path}.arguments`)
  }
  return t as unknown as MockToolCall
}

function validateExpect(c: Checker, value: unknown, path: string): void {
  const e = c.object(value, path)
  c.keys(e, path, EXPECT_KEYS)
  for (const k of ['model', 'lastRole', 'lastContains', 'systemContains'])
    c.optional(e, k, path, (v, p) => c.string(v, p))
  c.optional(e, 'messageCount', path, (v, p) => c.natural(v, p))
  if (e.stream !== undefined && typeof e.stream !== 'boolean')
    c.fail(`${path}.stream`, `expected a boolean, got ${describe(e.stream)}`)
  if (e.tools !== undefined) {
    if (!Array.isArray(e.tools)) c.fail(`${path}.tools`, `expected an array of tool names, got ${describe(e.tools)}`)
    e.tools.forEach((t, i) => {
      c.string(t, `${path}.tools[${i}]`)
    })
  }
}

function validateHeaders(c: Checker, value: unknown, path: string): void {
  const h = c.object(value, path)
  for (const [k, v] of Object.entries(h)) c.string(v, `${path}.${k}`)
}

/** Parses script text: JSON when `source` ends in `.json`, YAML otherwise (YAML also reads JSON). */
export function parseScript(text: string, source = '<inline script>'): MockScript {
  let data: unknown
  try {
    data = source.endsWith('.json') ? JSON.parse(text) : parseYaml(text)
  } catch (error) {
    throw new MockScriptError(source, '', `cannot parse: ${(error as Error).message.split('\n')[0]}`)
  }
  return validateScript(data, source)
}

/** Reads and validates a script file (`.json`, `.yaml` or `.yml`). */
export function loadScript(file: string): MockScript {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new MockScriptError(
      file,
      '',
      `cannot read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    )
  }
  return parseScript(text, file)
}
