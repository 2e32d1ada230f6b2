// The script each worker evaluates (`new Worker(source, {eval: true})`): the worker transport
// (the parent port; the run's data arrives as workerData) before the shared program host of
// @dsh/code-runtime.
import { programSource } from '@dsh/code-runtime'

const TRANSPORT = String.raw`
const { parentPort, workerData } = require('node:worker_threads')
const post = (message) => parentPort.postMessage(message)
const listen = (handler) => parentPort.on('message', handler)
const begin = (main) => main(workerData)
`

export const WORKER_SOURCE = programSource(TRANSPORT)
