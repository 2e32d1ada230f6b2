// The program side of a run, as JavaScript source shared by every provider: it compiles the
// program with node:vm (frames carry the model's file name and line numbers), bridges the
// bindings as namespaces of async functions, captures the console and the process streams, and
// serialises the returned value. Providers differ only in how messages travel (a worker's port,
// a child process's stdin/stdout); they prepend a transport snippet that defines:
//
//   post(message)     sends one message to the host
//   listen(handler)   calls handler(message) for each host message
//   begin(main)       calls main({code, filename, namespaces, globals}) once the run's data is known
//
// Protocol (program -> host): {t:'log', level, text} | {t:'call', id, ns, name, arg}
//   | {t:'done', json?} | {t:'fail', code, message, stack?}
// (host -> program): {t:'reply', id, ok, value?, message?, code?}
// Kept as strings so the same text runs from sources (vitest) and from dist/ without a file path.

/** The provider-independent program host: evaluated after the transport snippet. */
export const PROGRAM_HOST_SOURCE = String.raw`
const vm = require('node:vm')
const util = require('node:util')

const formatArgs = (args) => util.formatWithOptions({ depth: 6, colors: false, breakLength: 120 }, ...args)
const captured = {}
for (const level of ['log', 'info', 'warn', 'error', 'debug']) captured[level] = (...args) => post({ t: 'log', level, text: formatArgs(args) })
captured.trace = (...args) => post({ t: 'log', level: 'debug', text: formatArgs(args) })
captured.dir = (value) => post({ t: 'log', level: 'log', text: util.inspect(value, { depth: 6 }) })
captured.table = (value) => post({ t: 'log', level: 'log', text: util.inspect(value, { depth: 6 }) })
globalThis.console = captured
// Writes to the process streams are console output too (the transport kept its own writer).
for (const [stream, level] of [[process.stdout, 'log'], [process.stderr, 'error']]) {
  stream.write = (chunk, encoding, callback) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')
    post({ t: 'log', level, text: text.replace(/\n$/, '') })
    const done = typeof encoding === 'function' ? encoding : callback
    if (typeof done === 'function') queueMicrotask(done)
    return true
  }
}

let filename = 'program.ts'
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
listen((message) => {
  if (!message || message.t !== 'reply') return
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
// A throw from a timer callback: the run fails; the host then stops the program.
process.on('uncaughtException', (error) => fail('THROWN', error))
process.exit = () => { throw new Error('process.exit() is not available in a program; return a value instead') }

// Honest programs reach the host through their bindings (which go through the tool pipeline), not
// by loading Node modules: the module globals are removed before the program runs. This is not
// the confinement (a provider's process boundary and sandbox are).
for (const name of ['require', 'module', 'exports', '__filename', '__dirname']) {
  try { delete globalThis[name] } catch {}
}

begin((start) => {
  filename = start.filename
  const params = []
  const args = []
  for (const [ns, names] of Object.entries(start.namespaces)) { params.push(ns); args.push(makeNamespace(ns, names)) }
  for (const [name, value] of Object.entries(start.globals)) { params.push(name); args.push(value) }
  params.push('console')
  args.push(captured)

  let script
  try {
    script = new vm.Script('(async function (' + params.join(', ') + ') {\n' + start.code + '\n})', { filename, lineOffset: -1 })
  } catch (error) {
    const where = typeof error?.stack === 'string' ? error.stack.split('\n')[0] : ''
    if (!settled) {
      settled = true
      post({ t: 'fail', code: 'SYNTAX', message: headline(error) + (where.startsWith(filename) ? ' (at ' + where + ')' : '') })
    }
    return
  }
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
})
`

/** The whole script a provider evaluates: its transport snippet, then the shared program host. */
export function programSource(transport: string): string {
  return `'use strict'\n${transport}\n${PROGRAM_HOST_SOURCE}`
}
