// The worker-thread side of `createConverter`: converts HTML to Markdown off the main thread, one
// message at a time. Loaded from dist/ only (the built file beside dist/index.js).
import { parentPort } from 'node:worker_threads'
import { htmlToMarkdown } from './format.ts'

interface Job {
  id: number
  html: string
  base: string
}

parentPort?.on('message', (job: Job) => {
  try {
    parentPort!.postMessage({ id: job.id, markdown: htmlToMarkdown(job.html, job.base) })
  } catch (error) {
    parentPort!.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) })
  }
})
