// One program in one fresh worker thread: strip types host-side, start the worker with an empty
// environment and a heap cap, answer its binding calls, enforce the time budget and the caller's
// signal by terminating the worker, and collect `{value, logs, error?}`. The worker runs inside
// the harness process, unconfined: the provider uses it only where nothing is to be confined.
import { Worker } from 'node:worker_threads'
import {
  RunState,
  cancelledError,
  memoryError,
  messageOf,
  timeoutError,
  type CodeRunResult,
  type HostReply,
  type ResolvedCodeRun,
  type RunOutcome,
} from '@dsh/code-runtime'
import { WORKER_SOURCE } from './worker-source.ts'

export interface RunLimits {
  /** Console output kept per run, in characters; the rest is counted in `droppedLogChars`. */
  maxLogChars: number
}

/** Runs `request` (already resolved) in a fresh worker. Never rejects. */
export async function runInWorker(request: ResolvedCodeRun, limits: RunLimits): Promise<CodeRunResult> {
  const state = new RunState(request, limits.maxLogChars)
  if (request.signal?.aborted)
    return state.finish({ error: { code: 'CANCELLED', message: 'the run was cancelled before it started' } })
  const start = await state.start()
  if ('message' in start) return state.finish({ error: start })

  let worker: Worker
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: start,
      env: {},
      stdout: true,
      stderr: true,
      resourceLimits: {
        maxOldGenerationSizeMb: request.memoryMb,
        maxYoungGenerationSizeMb: Math.max(4, Math.min(32, Math.floor(request.memoryMb / 4))),
      },
    })
  } catch (error) {
    return state.finish({ error: { code: 'INTERNAL', message: `the worker could not start: ${messageOf(error)}` } })
  }
  // The program host captures the process streams; anything else written there is output too.
  for (const [stream, level] of [
    [worker.stdout, 'log'],
    [worker.stderr, 'error'],
  ] as const) {
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => state.record({ level, text: chunk.replace(/\n$/, '') }))
  }

  return await new Promise<CodeRunResult>((resolve) => {
    let done = false
    const end = (outcome: RunOutcome) => {
      if (done) return
      done = true
      clearTimeout(timer)
      request.signal?.removeEventListener('abort', onAbort)
      // terminate() stops a busy loop too; the result does not wait for the thread to be gone.
      worker.terminate().catch(() => {})
      resolve(state.finish(outcome))
    }
    const timer = setTimeout(() => end({ error: timeoutError(request.timeoutMs) }), request.timeoutMs)
    const onAbort = () => end({ error: cancelledError(request.signal!) })
    request.signal?.addEventListener('abort', onAbort, { once: true })

    worker.on('message', (raw: unknown) => {
      if (done) return
      state.receive(raw, 'the worker', end, reply)
    })
    worker.on('error', (error: Error & { code?: string }) => {
      end({
        error:
          error.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? memoryError(request.memoryMb)
            : { code: 'INTERNAL', message: `the worker failed: ${messageOf(error)}` },
      })
    })
    worker.on('exit', (code) =>
      end({ error: { code: 'INTERNAL', message: `the worker exited (code ${code}) before the program finished` } }),
    )

    function reply(message: HostReply) {
      if (done) return
      try {
        worker.postMessage(message)
      } catch (error) {
        worker.postMessage({
          t: 'reply',
          id: message.id,
          ok: false,
          message: `the host's answer could not be sent: ${messageOf(error)}`,
        })
      }
    }
  })
}
