// HTML-to-Markdown off the main thread: turndown is synchronous and costs seconds on a large page,
// during which the process would serve nothing else. Pages of at least `workerMinChars` go to one
// lazily started worker thread (dist/convert-worker.js, built beside this module); smaller pages,
// and runs from sources (tests, where no built worker exists), convert in-thread. An abort
// terminates the worker (the conversion inside cannot be interrupted otherwise); the next large
// page starts a new one.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { htmlToMarkdown } from './format.ts'

export interface HtmlConverter {
  /** Whether large pages go to a worker thread. */
  readonly threaded: boolean
  convert(html: string, base: string, signal?: AbortSignal): Promise<string>
  close(): Promise<void>
}

interface Pending {
  worker: Worker
  resolve(markdown: string): void
  reject(error: Error): void
}

export class ConversionAborted extends Error {
  override name = 'ConversionAborted'
}

export function createConverter(options: { workerMinChars: number; workerUrl?: URL }): HtmlConverter {
  const workerUrl = options.workerUrl ?? new URL('./convert-worker.js', import.meta.url)
  const threaded = workerUrl.pathname.endsWith('.js') && existsSync(fileURLToPath(workerUrl))
  let worker: Worker | undefined
  let seq = 0
  const pending = new Map<number, Pending>()

  /** Fails the jobs of one worker (all jobs when `of` is undefined). */
  const failAll = (error: Error, of?: Worker) => {
    for (const [id, p] of pending) {
      if (of && p.worker !== of) continue
      pending.delete(id)
      p.reject(error)
    }
  }
  const start = (): Worker => {
    const w = new Worker(workerUrl)
    w.on('message', (message: { id: number; markdown?: string; error?: string }) => {
      const p = pending.get(message.id)
      if (!p) return
      pending.delete(message.id)
      if (![...pending.values()].some((q) => q.worker === w)) w.unref()
      if (message.error !== undefined) p.reject(new Error(message.error))
      else p.resolve(message.markdown ?? '')
    })
    w.on('error', (error) => {
      if (worker === w) worker = undefined
      failAll(error, w)
    })
    w.on('exit', () => {
      if (worker === w) worker = undefined
      failAll(new Error('the conversion worker stopped'), w)
    })
    return w
  }

  return {
    threaded,
    convert(html, base, signal) {
      if (!threaded || html.length < options.workerMinChars) return Promise.resolve(htmlToMarkdown(html, base))
      if (signal?.aborted) return Promise.reject(new ConversionAborted('the conversion was cancelled'))
      const w = (worker ??= start())
      const id = ++seq
      return new Promise<string>((resolve, reject) => {
        const onAbort = () => {
          pending.delete(id)
          reject(new ConversionAborted('the conversion was cancelled'))
          if (worker === w) worker = undefined
          void w.terminate()
        }
        signal?.addEventListener('abort', onAbort, { once: true })
        pending.set(id, {
          worker: w,
          resolve: (markdown) => {
            signal?.removeEventListener('abort', onAbort)
            resolve(markdown)
          },
          reject: (error) => {
            signal?.removeEventListener('abort', onAbort)
            reject(error)
          },
        })
        // Held while a conversion is pending, so a one-shot run does not exit under it.
        w.ref()
        w.postMessage({ id, html, base })
      })
    },
    async close() {
      const w = worker
      worker = undefined
      failAll(new ConversionAborted('the converter was closed'))
      if (w) await w.terminate()
    },
  }
}
