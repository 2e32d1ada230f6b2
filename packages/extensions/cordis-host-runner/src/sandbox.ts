// The node:vm sandbox of one running host half. Only strings cross between the realms: the host
// hands the bridge two functions at creation (a synchronous `hostCall` and an asynchronous one that
// answers later through `settle`), the bridge keeps them in a closure the model's code cannot
// reach, and every value either way is JSON text. No host object (function, error, promise) is
// ever given to the model's code. node:vm is not a security boundary (ARCHITECTURE 5b): the user's
// approval before a run is; this keeps honest code from touching the host by accident and gives the
// runner clean timeouts and teardown.
import vm from 'node:vm'

/** The bridge, evaluated in the fresh context before any model code (it captures primordials). */
const BRIDGE = `(function (hostCall, hostCallAsync) {
  'use strict'
  const parse = JSON.parse, stringify = JSON.stringify, freeze = Object.freeze
  const then = Promise.prototype.then, PromiseCtor = Promise, MapCtor = Map
  const handlers = new MapCtor(), pending = new MapCtor(), disposers = []
  const mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapDelete = Map.prototype.delete, mapHas = Map.prototype.has
  let nextId = 0
  const sync = (op, payload) => {
    const reply = parse(hostCall(op, stringify(payload === undefined ? null : payload)))
    if (reply.error) throw new Error(reply.error)
    return reply.value
  }
  const async = (op, payload) => new PromiseCtor((resolve, reject) => {
    const id = ++nextId
    mapSet.call(pending, id, { resolve, reject })
    hostCallAsync(op, stringify(payload === undefined ? null : payload), id)
  })
  const dsh = freeze({
    handle(name, fn) {
      if (typeof name !== 'string' || !name) throw new TypeError('dsh.handle(name, fn): name must be a non-empty string')
      if (typeof fn !== 'function') throw new TypeError('dsh.handle(name, fn): fn must be a function')
      sync('handle', { name })
      mapSet.call(handlers, name, fn)
    },
    log(...parts) { sync('log', { text: parts.map((p) => typeof p === 'string' ? p : stringify(p)).join(' ') }) },
    exec(command) {
      if (typeof command !== 'string' || !command) return PromiseCtor.reject(new TypeError('dsh.exec(command): command must be a non-empty string'))
      return async('exec', { command })
    },
    onDispose(fn) {
      if (typeof fn !== 'function') throw new TypeError('dsh.onDispose(fn): fn must be a function')
      disposers.push(fn)
    },
  })
  const report = (id, promise) => {
    then.call(PromiseCtor.resolve(promise), (value) => {
      let text
      try { text = stringify({ value: value === undefined ? null : value }) } catch (e) { text = stringify({ error: 'the result is not JSON: ' + String(e && e.message) }) }
      if (text === undefined) text = stringify({ value: null })
      hostCall('done', stringify({ id, text }))
    }, (error) => {
      hostCall('done', stringify({ id, text: stringify({ error: String(error && error.message !== undefined ? error.message : error) }) }))
    })
  }
  const entries = freeze({
    apply(id, body) {
      report(id, new PromiseCtor((resolve) => resolve(body(dsh))))
    },
    invoke(id, name, inputText) {
      if (!mapHas.call(handlers, name)) {
        hostCall('done', stringify({ id, text: stringify({ missing: true }) }))
        return
      }
      const fn = mapGet.call(handlers, name)
      report(id, new PromiseCtor((resolve) => resolve(fn(parse(inputText)))))
    },
    settle(id, replyText) {
      const entry = mapGet.call(pending, id)
      if (!entry) return
      mapDelete.call(pending, id)
      const reply = parse(replyText)
      if (reply.error) entry.reject(new Error(reply.error))
      else entry.resolve(reply.value)
    },
    dispose(id) {
      const fns = disposers.splice(0).reverse()
      let chain = PromiseCtor.resolve()
      for (const fn of fns) chain = then.call(then.call(chain, () => fn()), undefined, () => {})
      report(id, chain)
    },
  })
  Object.defineProperty(globalThis, '__dshEntries', { value: entries, writable: false, configurable: false, enumerable: false })
})`

export interface SandboxHost {
  /** Synchronous operations (`handle`, `log`); the reply is JSON `{value}` or `{error}`. */
  call(op: string, payload: unknown): { value?: unknown; error?: string }
  /** Asynchronous operations (`exec`); the result is given back through `settle`. */
  callAsync(op: string, payload: unknown): Promise<unknown>
}

export interface SandboxOptions {
  /** Filename in stack traces, e.g. `dynamic:counter`. */
  filename: string
  /** Longest synchronous stretch of one evaluation or call, in ms. */
  timeoutMs: number
}

type Outcome = { value?: unknown; error?: string; missing?: boolean }

/** One vm context holding one host half's code. */
export class Sandbox {
  private readonly context: vm.Context
  private readonly waiting = new Map<number, (outcome: Outcome) => void>()
  private next = 0

  constructor(
    private readonly host: SandboxHost,
    private readonly options: SandboxOptions,
  ) {
    // No host globals at all: the context has its own builtins and nothing else (no require,
    // process, Buffer, timers or fetch); eval and new Function are refused inside it.
    this.context = vm.createContext(Object.create(null), {
      name: options.filename,
      codeGeneration: { strings: false, wasm: false },
    })
    const hostCall = (op: string, text: string): string => this.onCall(op, text)
    const hostCallAsync = (op: string, text: string, id: number): void => this.onCallAsync(op, text, id)
    const make = new vm.Script(BRIDGE, { filename: 'dsh-dynamic-bridge' }).runInContext(this.context) as (
      a: typeof hostCall,
      b: typeof hostCallAsync,
    ) => void
    make(hostCall, hostCallAsync)
  }

  /** Compiles the code as the body of `function (dsh) {...}` and runs it once; resolves when it settles. */
  async apply(code: string, settleMs: number): Promise<Outcome> {
    let script: vm.Script
    const id = ++this.next
    try {
      script = new vm.Script(`__dshEntries.apply(${id}, function (dsh) { 'use strict';\n${code}\n})`, {
        filename: this.options.filename,
        lineOffset: -1,
      })
    } catch (error) {
      return { error: `the code does not compile: ${describe(error)}` }
    }
    return this.round(id, () => script.runInContext(this.context, { timeout: this.options.timeoutMs }), settleMs)
  }

  /** Calls the handler `name` with `input` (JSON); `missing` when the code registered no such handler. */
  invoke(name: string, input: unknown, settleMs: number): Promise<Outcome> {
    const id = ++this.next
    const text = JSON.stringify(input ?? null)
    return this.round(id, () => this.enter(`invoke(${id}, ${JSON.stringify(name)}, ${JSON.stringify(text)})`), settleMs)
  }

  /** Runs the code's `dsh.onDispose` callbacks (last first). */
  dispose(settleMs: number): Promise<Outcome> {
    const id = ++this.next
    return this.round(id, () => this.enter(`dispose(${id})`), settleMs)
  }

  private round(id: number, start: () => void, settleMs: number): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id)
        resolve({ error: `no answer within ${settleMs} ms` })
      }, settleMs)
      this.waiting.set(id, (outcome) => {
        clearTimeout(timer)
        resolve(outcome)
      })
      try {
        // The synchronous stretch of the call is bounded by the vm timeout.
        start()
      } catch (error) {
        clearTimeout(timer)
        this.waiting.delete(id)
        resolve({ error: describe(error) })
      }
    })
  }

  /** Calls one bridge entry by source text (its arguments are JSON literals): nothing of the host's enters the context. */
  private enter(call: string): void {
    vm.runInContext(`__dshEntries.${call}`, this.context, { timeout: this.options.timeoutMs })
  }

  private onCall(op: string, text: string): string {
    if (op === 'done') {
      const { id, text: result } = JSON.parse(text) as { id: number; text: string }
      const waiter = this.waiting.get(id)
      if (waiter) {
        this.waiting.delete(id)
        waiter(JSON.parse(result) as Outcome)
      }
      return '{}'
    }
    try {
      const reply = this.host.call(op, JSON.parse(text))
      return JSON.stringify(reply)
    } catch (error) {
      return JSON.stringify({ error: describe(error) })
    }
  }

  private onCallAsync(op: string, text: string, id: number): void {
    const settle = (reply: { value?: unknown; error?: string }) => {
      let replyText: string
      try {
        replyText = JSON.stringify(reply)
      } catch (error) {
        replyText = JSON.stringify({ error: describe(error) })
      }
      try {
        this.enter(`settle(${id}, ${JSON.stringify(replyText)})`)
      } catch {
        // the context timed out while taking the answer; the code sees nothing further
      }
    }
    let payload: unknown
    try {
      payload = JSON.parse(text)
    } catch (error) {
      queueMicrotask(() => settle({ error: describe(error) }))
      return
    }
    this.host.callAsync(op, payload).then(
      (value) => settle({ value }),
      (error: unknown) => settle({ error: describe(error) }),
    )
  }
}

function describe(error: unknown): string {
  if (error && typeof error === 'object' && 'message' in error) return String((error as { message: unknown }).message)
  return String(error)
}
