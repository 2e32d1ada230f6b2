// End-to-end in the real terminal UI (the `dsh` bin in tmux, @dsh/llm-mock-server as the model):
// the `@` menu lists the resources of a connected MCP server (on the official SDK) as
// `@server:uri`, a pick inserts the whole mention, and the sent message carries the resource.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { TuiSession, killServer, workspace } from '@dsh/cli-testkit/tui'

const changing = fileURLToPath(new URL('./fixtures/changing-server.mjs', import.meta.url))

let session: TuiSession | undefined
afterAll(async () => {
  await session?.close()
  killServer()
})

describe('MCP resources in the TUI @ menu', () => {
  it('lists a server resource as @server:uri and a pick mentions it', { timeout: 60_000 }, async () => {
    const ws = workspace({ 'notes.txt': 'a\n' })
    writeFileSync(
      join(ws.home, 'settings.yaml'),
      `mcpServers:\n  changing:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(changing)}]\n`,
    )
    session = await TuiSession.start({ ws, steps: [{ text: 'Read it.' }] })
    const s = session
    await s.waitFor(/workspace-write/)
    s.type('read @coun')
    // The menu is computed per keystroke: until the server has listed its resources, type the last
    // character again.
    const deadline = Date.now() + 20_000
    for (;;) {
      try {
        await s.waitFor(/changing:fixture:\/\/counter/, 500)
        break
      } catch (error) {
        if (Date.now() > deadline) throw error
        s.keys('BSpace')
        s.type('n')
      }
    }
    s.keys('Tab')
    await s.waitFor(/read @changing:fixture:\/\/counter/)
    s.keys('Enter')
    await s.waitFor(/Read it\./)
    expect(JSON.stringify(s.server.requests[0].body)).toContain(
      JSON.stringify('<resource server="changing" uri="fixture://counter">\ncounter 0\n</resource>').slice(1, -1),
    )
  })
})
