// Child process of the contract's SIGKILL test: mounts a backend, writes one finished turn and an
// unfinished one (a long tool call that started), makes it durable, reports, then waits to be killed.
//   node --import tsx contract-child.ts <backend module> <config JSON>
import { Context } from 'cordis'
import { completeTurn, eventLog } from './fixtures.ts'

const [modulePath, configJson] = process.argv.slice(2)
const plugin = (await import(modulePath)).default
const ctx = new Context()
await ctx.plugin(plugin, JSON.parse(configJson))
const persistence = ctx.sessionPersistence
const log = eventLog('/w')
const id = log.session.id
await persistence.create({ id, cwd: '/w', origin: 'crash-test' })
log.session.subscribe((event) => void persistence.append(id, [event]))
completeTurn(log, 0)
log.add('turn/start', { turn: 1 })
log.add('step/start', { turn: 1, step: 0 })
log.add('user/message', { content: [{ type: 'text', text: 'run the long command' }], source: { kind: 'human' } })
log.add('assistant/message', {
  message: {
    role: 'assistant',
    content: [{ type: 'tool-call', callId: 'long-bash', name: 'bash', arguments: '{"command":"sleep 600"}' }],
  },
})
log.add('tool/call', { callId: 'long-bash', name: 'bash', arguments: '{"command":"sleep 600"}' })
log.add('tool/started', { callId: 'long-bash' })
await persistence.flush(id)
process.stdout.write(`durable ${id}\n`)
// Events after the flush may or may not survive the kill; they must not corrupt the log.
for (let i = 0; i < 50; i++) log.add('assistant/chunk', { chunk: { kind: 'text-delta', text: `late ${i}` } })
setInterval(() => {}, 1000)
