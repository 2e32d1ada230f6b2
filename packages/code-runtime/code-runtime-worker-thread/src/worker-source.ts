// The script each worker evaluates (`new Worker(source, {eval: true})`): kept as a string so the
// same text runs from sources (vitest) and from dist/ without a file path to resolve. It compiles
// the program with node:vm so frames carry the model's file name and line numbers, bridges the
// bindings over the parent port, captures the console, and serialises the returned value.
//
// Protocol (worker -> host): {t:'log', level, text} | {t:'call', id, ns, name, arg}
//   | {t:'done', json?} | {t:'fail', code, message, stack?}
// (host -> worker): {t:'reply', id, ok, value?, message?, code?}
export const WORKER_SOURCE = String.raw`
'use strict'
const { parentPort, workerData } = require('node:worker_threads')
const vm = require('node:vm')
const util = require('node:util')
const { code, filename, namespaces, globals } = workerData
const post = (message) => parentPort.postMessage(message)

const formatArgs = (args) => util.formatWithOptions({ depth: 6, colors: false, breakLength: 120 }, ...args)
const captured = {}
for (const level of ['log', 'info', 'warn', 'error', 'debug']) captured[level] = (...args) => post({ t: 'log', level, text: formatArgs(args) })
captured.trace = (...args) => post({ t: 'log', level: 'debug', text: formatArgs(args) })
captured.dir = (value) => post({ t: 'log', level: 'log', text: util.inspect(value, { depth: 6 }) })
captured.table = (value) => post({ t: 'log', level: 'log', text: util.inspect(value, { depth: 6 }) })
globalThis.console = captured

// The program's own frames: the message line, then only "at" lines naming its file.
const ownStack = (error) => {
  const stack = typeof error?.stack === 'string' ? error.stack : ''
  const frames = stack.split('\n').filter((line) => /^\s+at /.test(line) && line.includes(filename + ':'))
  return frames.map((line) => '    ' + line.trim().replace(/ \(eval at [^)]*\), /, ' (')).join('\n')
}
const headline = (error) => {
  if (error instanceof Error) return (error.name || 'Error') + ': ' + error.message
  try { return 'Uncaught ' + util.inspect(error, { depth: 2 }) } catch { return 'Uncaught exception' }
}
let settled = false
const fail = (code, error) => {
  if (settled) return
  settled = true
  post({ t: 'fail', code, message: headline(error), stack: ownStack(error) || undefined })
}

let nextId = 0
const pending = new Map()
parentPort.on('message', (message) => {
  if (message.t !== 'reply') return
  const waiter = pending.get(message.id)
  if (!waiter) return
  pending.delete(message.id)
  if (message.ok) waiter.resolve(message.value)
  else {
    const error = new Error(message.message)
    if (message.code !== undefined) error.code = message.code
    waiter.reject(error)
  }
})

const makeNamespace = (ns, names) => {
  const table = Object.create(null)
  for (const name of names) {
    table[name] = (arg) => new Promise((resolve, reject) => {
      const id = ++nextId
      try {
        post({ t: 'call', id, ns, name, arg })
      } catch (error) {
        reject(new TypeError(ns + '.' + name + ': the argument cannot be sent to the host (' + (error && error.message) + '); pass plain data'))
        return
      }
      pending.set(id, { resolve, reject })
    })
  }
  Object.freeze(table)
  return new Proxy(table, {
    get(target, prop) {
      if (typeof prop !== 'string' || prop in target || prop === 'then' || prop === 'toJSON') return target[prop]
      throw new TypeError(ns + '.' + prop + ' does not exist. Available: ' + (names.length ? names.join(', ') : '(none)'))
    },
  })
}

process.on('unhandledRejection', (error) => post({ t: 'log', level: 'warn', text: 'Unhandled promise rejection: ' + headline(error) }))
// A throw from a timer callback: the run fails; the host then terminates this worker.
process.on('uncaughtException', (error) => fail('THROWN', error))
process.exit = () => { throw new Error('process.exit() is not available in a program; return a value instead') }

// Programs reach the host through their bindings (which go through the tool pipeline), not by
// loading Node modules: the eval worker's module globals are removed before the program runs.
for (const name of ['require', 'module', 'exports', '__filename', '__dirname']) {
  try { delete globalThis[name] } catch {}
}

const params = []
const args = []
for (const [ns, names] of Object.entries(namespaces)) { params.push(ns); args.push(makeNamespace(ns, names)) }
for (const [name, value] of Object.entries(globals)) { params.push(name); args.push(value) }
params.push('console')
args.push(captured)

let script
try {
  script = new vm.Script('(async function (' + params.join(', ') + ') {\n' + code + '\n})', { filename, lineOffset: -1 })
} catch (error) {
  const where = typeof error?.stack === 'string' ? error.stack.split('\n')[0] : ''
  if (!settled) {
    settled = true
    post({ t: 'fail', code: 'SYNTAX', message: headline(error) + (where.startsWith(filename) ? ' (at ' + where + ')' : '') })
  }
  script = undefined
}
if (script) {
  Promise.resolve()
    .then(() => script.runInThisContext()(...args))
    .then((value) => {
      if (settled) return
      if (value === undefined) { settled = true; post({ t: 'done' }); return }
      let json
      try {
        json = JSON.stringify(value)
      } catch (error) {
        settled = true
        post({ t: 'fail', code: 'UNSERIALIZABLE', message: 'the returned value cannot be represented as JSON (' + (error && error.message) + '); return plain data' })
        return
      }
      settled = true
      if (json === undefined) post({ t: 'fail', code: 'UNSERIALIZABLE', message: 'the returned value (' + typeof value + ') cannot be represented as JSON; return plain data' })
      else post({ t: 'done', json })
    }, (error) => fail('THROWN', error))
}
`
