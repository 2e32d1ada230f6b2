// End-to-end in the real terminal UI (the `dsh` bin in tmux, @dsh/llm-mock-server as the model)
// with a server on the official SDK: a prompt the server adds (notifications/prompts/list_changed)
// while the `/` menu is open joins that open menu, without a keystroke. The menu is opened while a
// slow tool call holds the turn; releasing it lets the model's next step add the prompt.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
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

describe('an open / menu in the TUI', () => {
  it('lists a prompt the server adds while it is open', { timeout: 60_000 }, async () => {
    const ws = workspace()
    const release = join(mkdtempSync(join(tmpdir(), 'dsh-open-menu-')), 'release')
    writeFileSync(
      join(ws.home, 'settings.yaml'),
      `mcpServers:\n  changing:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(changing)}]\n`,
    )
    session = await TuiSession.start({
      ws,
      steps: [
        { toolCalls: [{ id: 'c1', name: 'mcp__changing__slow', arguments: { done: 1, total: 1, release } }] },
        { toolCalls: [{ id: 'c2', name: 'mcp__changing__add_prompt', arguments: { name: 'fresh' } }] },
        { text: 'Added it.' },
      ],
    })
    const s = session
    await s.waitFor(/workspace-write/)
    s.type('run the slow one')
    s.keys('Enter')
    await s.waitFor(/step 1 of 1/)
    // The turn is held by the slow call: open the menu now.
    s.type('/mcp__chan')
    await s.waitFor(/mcp__changing__hello/)
    expect(s.screen()).not.toMatch(/mcp__changing__fresh/)
    writeFileSync(release, '')
    // No key is pressed from here on: the open menu must take the new prompt by itself.
    await s.waitFor(/Added it\./)
    await s.waitFor((screen) => /mcp__changing__fresh/.test(screen) && /mcp__changing__hello/.test(screen))
    expect(s.screen()).toMatch(/\/mcp__chan/)
  })
})
