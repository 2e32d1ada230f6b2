// The script the confined child evaluates (`node -e <source>`): the stdio transport before the
// shared program host of @dsh/code-runtime. Messages are newline-delimited JSON: the host writes
// `{t:'start', ...}` and then replies on stdin; the program host's messages go to stdout through a
// writer kept before the program host replaces the process streams' `write` (so the program's own
// writes become log messages). The end of stdin (the host went away) ends the child.
import { programSource } from '@dsh/code-runtime'

const TRANSPORT = String.raw`
const writeLine = process.stdout.write.bind(process.stdout)
const exitNow = process.exit.bind(process)
const post = (message) => { writeLine(JSON.stringify(message) + '\n') }
const handlers = []
const listen = (handler) => { handlers.push(handler) }
let main
let started = false
const begin = (fn) => { main = fn }
let buffer = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => {
  buffer += chunk
  let end
  while ((end = buffer.indexOf('\n')) >= 0) {
    const line = buffer.slice(0, end)
    buffer = buffer.slice(end + 1)
    if (line === '') continue
    let message
    try { message = JSON.parse(line) } catch { continue }
    if (message && message.t === 'start') {
      if (!started && main) { started = true; main(message) }
    } else {
      for (const handler of handlers) handler(message)
    }
  }
})
process.stdin.on('end', () => exitNow(0))
`

export const CHILD_SOURCE = programSource(TRANSPORT)

/** An argument after the source: names the process in a process list (`dsh-code-runtime`). */
export const CHILD_MARKER = 'dsh-code-runtime'
