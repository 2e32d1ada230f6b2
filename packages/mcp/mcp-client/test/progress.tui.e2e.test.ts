// End-to-end in the real terminal UI (the `dsh` bin in tmux, @dsh/llm-mock-server as the model):
// a tool of a server on the official SDK sends notifications/progress while it runs, and the
// running call's card shows the latest one as a bar with "3/10 step 3 of 10"; once the server
// answers, the card shows the result instead.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, it } from 'vitest'
import { TuiSession, killServer, workspace } from '@dsh/cli-testkit/tui'

const changing = fileURLToPath(new URL('./fixtures/changing-server.mjs', import.meta.url))

let session: TuiSession | undefined
afterAll(async () => {
  await session?.close()
  killServer()
})

describe('MCP progress on the TUI tool card', () => {
  it('draws the latest progress of a running call, then its result', { timeout: 60_000 }, async () => {
    const ws = workspace()
    const release = join(ws.root, 'release')
    writeFileSync(
      join(ws.home, 'settings.yaml'),
      `mcpServers:\n  changing:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(changing)}]\n`,
    )
    session = await TuiSession.start({
      ws,
      steps: [
        { toolCalls: [{ id: 'c1', name: 'mcp__changing__slow', arguments: { done: 3, total: 10, release } }] },
        { text: 'Released.' },
      ],
    })
    const s = session
    await s.waitFor(/workspace-write/)
    s.type('run the slow one')
    s.keys('Enter')
    // The server holds its answer until `release` exists, so the card can only be running here.
    await s.waitFor(/mcp__changing__slow[\s\S]*\[■■■□□□□□□□\] 3\/10 step 3 of 10/)
    writeFileSync(release, '')
    await s.waitFor(/Released\./)
    await s.waitFor((screen) => screen.includes('released after 3 of 10') && !screen.includes('3/10 step 3'))
  })
})
