// One language server process for one workspace root: JSON-RPC with `Content-Length` framing over
// the process's stdio (spawned through `ctx.subprocess`), the initialize handshake, document
// sync (full text), answers to the server's own requests, and the diagnostics it publishes.
import { readFile } from 'node:fs/promises'
import { basename } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { ProcessHandle, SubprocessService } from '@dsh/subprocess'

export interface ServerSpec {
  command: string
  args: string[]
  env: Record<string, string>
  initializationOptions?: unknown
  /** Extension (with dot) -> LSP language id. */
  languageIds: Record<string, string>
}

interface Pending {
  resolve(value: unknown): void
  reject(error: Error): void
  timer: NodeJS.Timeout
}

export interface RawDiagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } }
  severity?: number
  message: string
  source?: string
  code?: string | number
}

export const uriOf = (path: string) => pathToFileURL(path).href

export class LanguageServerClient {
  private handle?: ProcessHandle
  private buffer = Buffer.alloc(0)
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly documents = new Map<string, { version: number; text: string }>()
  private readonly published = new Map<string, RawDiagnostic[]>()
  private readonly publishWaiters = new Map<string, Array<() => void>>()
  private stderrTail = ''
  /** `$/progress` tokens begun and not yet ended: the server is busy (e.g. loading the project). */
  private readonly progress = new Set<string | number>()
  private progressWaiters: Array<() => void> = []
  /** Set once the process is gone; the provider then starts a new client. */
  dead = false
  ready: Promise<void>

  constructor(
    private readonly subprocess: SubprocessService,
    private readonly spec: ServerSpec,
    readonly root: string,
    private readonly requestTimeoutMs: number,
    private readonly openGraceMs: number,
    /** Turns the server's argv into the one that runs it confined (the sandbox's wrap); identity when absent. */
    private readonly confine?: (argv: string[], cwd: string) => Promise<string[]>,
  ) {
    this.ready = this.start()
  }

  private async start(): Promise<void> {
    const original = [this.spec.command, ...this.spec.args]
    // A refusal (no sandbox runner for a confining mode) rejects `ready`: the server never starts.
    const argv = this.confine ? await this.confine(original, this.root) : original
    const handle = this.subprocess.spawn({
      file: argv[0]!,
      args: argv.slice(1),
      cwd: this.root,
      env: { set: this.spec.env },
      stdin: 'pipe',
      retentionMode: 'none',
      kill: { graceMs: 1000 },
    })
    this.handle = handle
    handle.onOutput((chunk) => {
      if (chunk.stream === 'stderr')
        this.stderrTail = (this.stderrTail + Buffer.from(chunk.data).toString('utf8')).slice(-2000)
      else this.receive(Buffer.from(chunk.data))
    })
    void handle.exited.then((exit) => {
      this.dead = true
      const why = exit.spawnError
        ? `could not start ${JSON.stringify(this.spec.command)}: ${exit.spawnError.code}`
        : `the language server exited (${exit.signal ?? `code ${exit.code}`})${this.stderrTail.trim() ? `: ${this.stderrTail.trim().split('\n').at(-1)}` : ''}`
      for (const [id, pending] of this.pending) {
        clearTimeout(pending.timer)
        pending.reject(new Error(why))
        this.pending.delete(id)
      }
    })
    const uri = uriOf(this.root)
    await this.request('initialize', {
      // A confined server lives in its own PID namespace where dsh's pid names no process (or
      // another one): servers that watch this pid (vscode-languageserver's) would exit at once.
      // Its end with dsh is the subprocess seam's job either way.
      processId: this.confine ? null : process.pid,
      rootUri: uri,
      rootPath: this.root,
      workspaceFolders: [{ uri, name: basename(this.root) }],
      initializationOptions: this.spec.initializationOptions ?? {},
      capabilities: {
        textDocument: {
          synchronization: { didSave: true, dynamicRegistration: false },
          publishDiagnostics: { relatedInformation: false },
          hover: { contentFormat: ['markdown', 'plaintext'] },
          definition: { linkSupport: true },
          implementation: { linkSupport: true },
          references: {},
          documentSymbol: { hierarchicalDocumentSymbolSupport: true },
        },
        workspace: { symbol: {}, configuration: true, workspaceFolders: true },
        window: { workDoneProgress: true },
      },
    })
    this.notify('initialized', {})
  }

  private receive(data: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, data])
    for (;;) {
      const headerEnd = this.buffer.indexOf('\r\n\r\n')
      if (headerEnd < 0) return
      const header = this.buffer.subarray(0, headerEnd).toString('ascii')
      const match = /Content-Length:\s*(\d+)/i.exec(header)
      if (!match) {
        this.buffer = this.buffer.subarray(headerEnd + 4)
        continue
      }
      const length = Number(match[1])
      if (this.buffer.byteLength < headerEnd + 4 + length) return
      const body = this.buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString('utf8')
      this.buffer = this.buffer.subarray(headerEnd + 4 + length)
      let message: {
        id?: number | string
        method?: string
        params?: unknown
        result?: unknown
        error?: { message: string }
      }
      try {
        message = JSON.parse(body)
      } catch {
        continue
      }
      this.dispatch(message)
    }
  }

  private dispatch(message: {
    id?: number | string
    method?: string
    params?: unknown
    result?: unknown
    error?: { message: string }
  }): void {
    if (message.method !== undefined && message.id !== undefined) {
      this.answer(message.id, message.method, message.params)
      return
    }
    if (message.method !== undefined) {
      if (message.method === '$/progress') {
        const { token, value } = message.params as { token: string | number; value?: { kind?: string } }
        if (value?.kind === 'begin') this.progress.add(token)
        else if (value?.kind === 'end') this.progress.delete(token)
        if (value?.kind === 'begin' || this.progress.size === 0) {
          const waiters = this.progressWaiters
          this.progressWaiters = []
          for (const wake of waiters) wake()
        }
        return
      }
      if (message.method === 'textDocument/publishDiagnostics') {
        const params = message.params as { uri: string; diagnostics: RawDiagnostic[] }
        this.published.set(params.uri, params.diagnostics)
        const waiters = this.publishWaiters.get(params.uri) ?? []
        this.publishWaiters.delete(params.uri)
        for (const wake of waiters) wake()
      }
      return
    }
    const pending = typeof message.id === 'number' ? this.pending.get(message.id) : undefined
    if (!pending) return
    this.pending.delete(message.id as number)
    clearTimeout(pending.timer)
    if (message.error) pending.reject(new Error(message.error.message))
    else pending.resolve(message.result ?? null)
  }

  /** The server's own requests: answered with neutral values so it carries on. */
  private answer(id: number | string, method: string, params: unknown): void {
    let result: unknown = null
    if (method === 'workspace/configuration') result = ((params as { items?: unknown[] })?.items ?? []).map(() => null)
    else if (method === 'workspace/workspaceFolders') result = [{ uri: uriOf(this.root), name: basename(this.root) }]
    else if (
      ![
        'client/registerCapability',
        'client/unregisterCapability',
        'window/workDoneProgress/create',
        'window/showMessageRequest',
      ].includes(method)
    ) {
      this.write({
        jsonrpc: '2.0',
        id,
        error: { code: -32601, message: `method not supported by dsh: ${method}` },
      })
      return
    }
    this.write({ jsonrpc: '2.0', id, result })
  }

  private write(message: unknown): void {
    if (this.dead || !this.handle) return
    const body = Buffer.from(JSON.stringify(message), 'utf8')
    try {
      this.handle.write(Buffer.concat([Buffer.from(`Content-Length: ${body.byteLength}\r\n\r\n`, 'ascii'), body]))
    } catch {
      // The process is gone or never started; its exit rejects what is pending with the reason.
    }
  }

  request<T>(method: string, params: unknown): Promise<T> {
    if (this.dead) return Promise.reject(new Error('the language server is not running'))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        this.write({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id } })
        reject(new Error(`the language server did not answer ${method} within ${this.requestTimeoutMs / 1000} s`))
      }, this.requestTimeoutMs)
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer })
      this.write({ jsonrpc: '2.0', id, method, params })
    })
  }

  notify(method: string, params: unknown): void {
    this.write({ jsonrpc: '2.0', method, params })
  }

  /** Resolves on the next progress change (a begin, or the last end), or after `ms`. */
  private progressChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        resolve()
      }
      this.progressWaiters.push(done)
    })
  }

  /**
   * Waits while the server reports work in progress (bounded by the request timeout). After the
   * first document is opened, waits `graceMs` for such work to begin: a server loading its project
   * answers early requests from a partial view (TypeScript resolves no imports yet).
   */
  async settle(graceMs: number): Promise<void> {
    const deadline = Date.now() + this.requestTimeoutMs
    if (this.progress.size === 0 && graceMs > 0) await this.progressChange(graceMs)
    while (this.progress.size > 0 && Date.now() < deadline) await this.progressChange(deadline - Date.now())
  }

  /** Opens `path` (or sends its new text when it changed on disk). Returns whether anything was sent. */
  async sync(path: string): Promise<boolean> {
    await this.ready
    const text = await readFile(path, 'utf8')
    const uri = uriOf(path)
    const open = this.documents.get(uri)
    if (!open) {
      const ext = /\.[^./]+$/.exec(path)?.[0] ?? ''
      this.documents.set(uri, { version: 1, text })
      this.notify('textDocument/didOpen', {
        textDocument: { uri, languageId: this.spec.languageIds[ext] ?? ext.slice(1), version: 1, text },
      })
      await this.settle(this.documents.size === 1 ? this.openGraceMs : 0)
      return true
    }
    if (open.text === text) return false
    open.version++
    open.text = text
    this.notify('textDocument/didChange', { textDocument: { uri, version: open.version }, contentChanges: [{ text }] })
    this.notify('textDocument/didSave', { textDocument: { uri } })
    return true
  }

  /**
   * Syncs `path` and waits for the server to publish its diagnostics: until a publication is
   * followed by a quiet window without another one, at most `maxWaitMs` after the change was sent.
   * The server's start and project load (both awaited by `sync`) do not count against `maxWaitMs`;
   * the caller bounds the whole wait.
   */
  async diagnostics(path: string, maxWaitMs: number, quietMs: number): Promise<RawDiagnostic[]> {
    const uri = uriOf(path)
    /** Registers a waiter now; it resolves true on the next publication for `uri`, false once disarmed. */
    const nextPublish = () => {
      let disarm = () => {}
      const promise = new Promise<boolean>((resolve) => {
        const list = this.publishWaiters.get(uri) ?? []
        const wake = () => resolve(true)
        list.push(wake)
        this.publishWaiters.set(uri, list)
        disarm = () => {
          const current = this.publishWaiters.get(uri)
          if (current?.includes(wake)) current.splice(current.indexOf(wake), 1)
          resolve(false)
        }
      })
      return { promise, disarm }
    }
    const within = async (waiter: ReturnType<typeof nextPublish>, ms: number) => {
      const timer = setTimeout(waiter.disarm, Math.max(0, ms))
      try {
        return await waiter.promise
      } finally {
        clearTimeout(timer)
      }
    }
    // Listening before the change is sent, so an early publication is not missed.
    let first = nextPublish()
    const changed = await this.sync(path)
    if (!changed && this.published.has(uri)) {
      first.disarm()
      return this.published.get(uri) ?? []
    }
    const changedAt = Date.now()
    let deadline = changedAt + maxWaitMs
    // Time the server spends on reported work (a project loading after the first open) does not
    // count either: while it reports progress, the wait for the first publication is extended,
    // up to the request timeout.
    const busyUntil = changedAt + this.requestTimeoutMs
    let seen = await within(first, deadline - Date.now())
    while (!seen && this.progress.size > 0 && Date.now() < busyUntil) {
      first = nextPublish()
      const busy = this.progressChange(busyUntil - Date.now()).then(() => 'progress' as const)
      const outcome = await Promise.race([first.promise, busy])
      if (outcome === true) seen = true
      else {
        first.disarm()
        if (this.progress.size === 0) {
          deadline = Date.now() + maxWaitMs
          seen = await within(nextPublish(), maxWaitMs)
        }
      }
    }
    const firstAt = Date.now()
    // A server that took long for its first publication (a loaded machine, a big project) takes
    // about as long for the next kind of check (typescript-language-server publishes syntax, then
    // semantic errors): the quiet window is at least that long, so a slow server's second
    // publication is not cut off by a window sized for a fast one.
    const quiet = Math.max(quietMs, firstAt - changedAt)
    deadline = Math.max(deadline, firstAt + quiet)
    while (seen && Date.now() < deadline) {
      seen = await within(nextPublish(), Math.min(quiet, deadline - Date.now()))
    }
    return this.published.get(uri) ?? []
  }

  async stop(): Promise<void> {
    if (this.dead || !this.handle) return
    try {
      await Promise.race([this.request('shutdown', null), new Promise((resolve) => setTimeout(resolve, 1000))])
      this.notify('exit', null)
    } catch {
      // Already gone.
    }
    await this.handle.terminate()
  }
}
