// A separate writer process for list-index.test.ts: creates, writes and closes `count` sessions
// named `<prefix>-<n>` in the store at `root`, one at a time, then exits.
import { Context } from 'cordis'
import { completeTurn, eventLog } from '@dsh/session-persistence/contract'
import JsonlPersistence from '../src/index.ts'

const [root, prefix, count] = process.argv.slice(2)
const ctx = new Context()
await ctx.plugin(JsonlPersistence, { root, batchWindowMs: 1, fsync: false })
const p = ctx.sessionPersistence as JsonlPersistence
for (let n = 0; n < Number(count); n++) {
  const id = `${prefix}-${n}`
  const log = eventLog('/shared')
  completeTurn(log, 0)
  await p.create({ id, cwd: '/shared' })
  await p.append(id, [...log.session.events])
  await p.close(id)
}
await (ctx as unknown as { fiber: { dispose(): Promise<void> } }).fiber.dispose()
