// End-to-end in the real terminal UI (the `dsh` bin in tmux, @dsh/llm-mock-server as the model)
// with a server on the official SDK that offers a resource template (`notes://day/{day}`): picking
// it from the `@` menu asks for `day` in a panel (a blank value is refused with a line naming it),
// the filled mention replaces the typed `@query`, and the model reads the filled URI.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { TuiSession, killServer, workspace } from '@dsh/cli-testkit/tui'

const notes = fileURLToPath(new URL('./fixtures/notes-server.mjs', import.meta.url))

let session: TuiSession | undefined
afterAll(async () => {
  await session?.close()
  killServer()
})

type Message = { role: string; content: string | Array<{ type: string; text?: string }> }
const texts = (body: unknown) =>
  ((body as { messages: Message[] }).messages ?? [])
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join('\n')))

describe('MCP resource templates in the TUI', () => {
  it('asks for the variables of a picked template and sends the filled URI', { timeout: 60_000 }, async () => {
    const ws = workspace()
    writeFileSync(
      join(ws.home, 'settings.yaml'),
      `mcpServers:\n  notes:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(notes)}]\n`,
    )
    session = await TuiSession.start({ ws, steps: [{ text: 'Day read.' }] })
    const s = session
    await s.waitFor(/workspace-write/)
    s.type('see @notes:notes://da')
    // The menu is computed per keystroke: until the server has listed, type the last letter again.
    const deadline = Date.now() + 20_000
    for (;;) {
      try {
        await s.waitFor(/notes:notes:\/\/day\/\{day\}/, 500)
        break
      } catch (error) {
        if (Date.now() > deadline) throw error
        s.keys('BSpace')
        s.type('a')
      }
    }
    s.keys('Tab')
    await s.waitFor(/Fill in @notes:notes:\/\/day\/\{day\}/)
    // A blank value is refused, the panel stays.
    s.keys('Enter')
    await s.waitFor(/"day" is empty: a resource template needs a value/)
    s.type('monday')
    s.keys('Enter')
    await s.waitFor((screen) => screen.includes('see @notes:notes://day/monday') && !screen.includes('Fill in'))
    s.keys('Enter')
    await s.waitFor(/Day read\./)
    expect(texts(s.server.requests[0].body)).toContain(
      '<resource server="notes" uri="notes://day/monday">\nnote of monday\n</resource>',
    )
  })
})
