// One program in one fresh worker thread: strip types host-side, start the worker with an empty
// environment and a heap cap, answer its binding calls, enforce the time budget and the caller's
// signal by terminating the worker, and collect `{value, logs, error?}`.
import { Worker } from 'node:worker_threads'
import type { CodeLog, CodeRunError, CodeRunResult, JsonValue, ResolvedCodeRun } from '@dsh/code-runtime'
import { stripTypes, TypeStripError } from './strip.ts'
import { WORKER_SOURCE } from './worker-source.ts'

export interface RunLimits {
  /** Console output kept per run, in characters; the rest is counted in `droppedLogChars`. */
  maxLogChars: number
}

type FromWorker =
  | { t: 'log'; level: CodeLog['level']; text: string }
  | { t: 'call'; id: number; ns: string; name: string; arg: unknown }
  | { t: 'done'; json?: string }
  | { t: 'fail'; code: CodeRunError['code']; message: string; stack?: string }

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Runs `request` (already resolved) in a fresh worker. Never rejects. */
export async function runInWorker(request: ResolvedCodeRun, limits: RunLimits): Promise<CodeRunResult> {
  const started = performance.now()
  const logs: CodeLog[] = []
  let logChars = 0
  let dropped = 0
  let calls = 0
  const finish = (outcome: { value?: JsonValue; error?: CodeRunError }): CodeRunResult => ({
    ...(outcome.value !== undefined ? { value: outcome.value } : {}),
    logs,
    ...(dropped > 0 ? { droppedLogChars: dropped } : {}),
    ...(outcome.error ? { error: outcome.error } : {}),
    calls,
    durationMs: Math.round(performance.now() - started),
  })

  if (request.signal?.aborted) return finish({ error: { code: 'CANCELLED', message: 'the run was cancelled before it started' } })

  let source = request.code
  if (request.language === 'typescript') {
    try {
      source = await stripTypes(request.code)
    } catch (error) {
      const message = error instanceof TypeStripError ? error.message : messageOf(error)
      return finish({ error: { code: 'SYNTAX', message: `SyntaxError: ${message}` } })
    }
  }

  const namespaces: Record<string, string[]> = {}
  for (const [ns, table] of Object.entries(request.bindings)) namespaces[ns] = Object.keys(table).sort()

  // Set once the result is handed out: late output (a stream flushing after the end) is dropped.
  let closed = false
  const record = (log: CodeLog) => {
    if (closed) return
    const room = limits.maxLogChars - logChars
    if (room <= 0) {
      dropped += log.text.length
      return
    }
    const kept = log.text.length <= room ? log : { level: log.level, text: log.text.slice(0, room) }
    dropped += log.text.length - kept.text.length
    logChars += kept.text.length
    logs.push(kept)
    try {
      request.onLog?.(kept)
    } catch {}
  }

  // Aborted when the run ends for any reason: pending binding calls are told to stop.
  const lifetime = new AbortController()
  let worker: Worker
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { code: source, filename: request.filename, namespaces, globals: request.globals },
      env: {},
      stdout: true,
      stderr: true,
      resourceLimits: { maxOldGenerationSizeMb: request.memoryMb, maxYoungGenerationSizeMb: Math.max(4, Math.min(32, Math.floor(request.memoryMb / 4))) },
    })
  } catch (error) {
    return finish({ error: { code: 'INTERNAL', message: `the worker could not start: ${messageOf(error)}` } })
  }
  // Writes to process.stdout/stderr inside the program are console output too.
  for (const [stream, level] of [[worker.stdout, 'log'], [worker.stderr, 'error']] as const) {
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => record({ level, text: chunk.replace(/\n$/, '') }))
  }

  return await new Promise<CodeRunResult>((resolve) => {
    let done = false
    const end = (outcome: { value?: JsonValue; error?: CodeRunError }) => {
      if (done) return
      done = true
      clearTimeout(timer)
      request.signal?.removeEventListener('abort', onAbort)
      lifetime.abort(new Error(outcome.error ? `the program ended (${outcome.error.code})` : 'the program ended'))
      // terminate() stops a busy loop too; the result does not wait for the thread to be gone.
      worker.terminate().catch(() => {})
      closed = true
      resolve(finish(outcome))
    }
    const timer = setTimeout(
      () => end({ error: { code: 'TIMEOUT', message: `the program ran longer than its ${request.timeoutMs} ms limit and was stopped` } }),
      request.timeoutMs,
    )
    const onAbort = () => end({ error: { code: 'CANCELLED', message: `the run was cancelled (${reasonOf(request.signal!)}) and the program was stopped` } })
    request.signal?.addEventListener('abort', onAbort, { once: true })

    worker.on('message', (message: FromWorker) => {
      if (done) return
      switch (message.t) {
        case 'log':
          record({ level: message.level, text: message.text })
          return
        case 'call':
          calls++
          void answer(message)
          return
        case 'done': {
          if (message.json === undefined) return end({})
          try {
            return end({ value: JSON.parse(message.json) as JsonValue })
          } catch (error) {
            return end({ error: { code: 'INTERNAL', message: `the returned value could not be read: ${messageOf(error)}` } })
          }
        }
        case 'fail':
          return end({ error: { code: message.code, message: message.message, ...(message.stack ? { stack: message.stack } : {}) } })
      }
    })
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        end({ error: { code: 'MEMORY', message: `the program used more than its ${request.memoryMb} MiB heap limit and was stopped` } })
      } else {
        end({ error: { code: 'INTERNAL', message: `the worker failed: ${messageOf(error)}` } })
      }
    })
    worker.on('exit', (code) => end({ error: { code: 'INTERNAL', message: `the worker exited (code ${code}) before the program finished` } }))

    async function answer(message: Extract<FromWorker, { t: 'call' }>) {
      const fn = request.bindings[message.ns]?.[message.name]
      let reply: Record<string, unknown>
      try {
        if (!fn) throw new TypeError(`${message.ns}.${message.name} does not exist`)
        const value = await fn(message.arg, { signal: lifetime.signal })
        reply = { t: 'reply', id: message.id, ok: true, value: toCloneable(value) }
      } catch (error) {
        const code = (error as { code?: unknown })?.code
        reply = { t: 'reply', id: message.id, ok: false, message: messageOf(error), ...(typeof code === 'string' ? { code } : {}) }
      }
      if (done) return
      try {
        worker.postMessage(reply)
      } catch (error) {
        worker.postMessage({ t: 'reply', id: message.id, ok: false, message: `the host's answer could not be sent: ${messageOf(error)}` })
      }
    }
  })
}

/** JSON round trip: binding results reach the program as plain data. */
function toCloneable(value: unknown): unknown {
  if (value === undefined) return undefined
  return JSON.parse(JSON.stringify(value)) as unknown
}

function reasonOf(signal: AbortSignal): string {
  const reason = signal.reason as unknown
  if (reason instanceof Error) return reason.message
  return reason === undefined ? 'aborted' : String(reason)
}
