// End-to-end in the real terminal UI (the `dsh` bin in tmux, @dsh/llm-mock-server as the model)
// with a server on the official SDK that changes what it offers mid-session: its prompts are in
// the `/` menu as soon as it connects, and after the model made it add a prompt, a tool and a
// resource (notifications/{prompts,tools,resources}/list_changed), the new prompt is in the menu
// and runs, the new tool is offered to the model, and the new resource can be mentioned.
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

type Message = { role: string; content: string | Array<{ type: string; text?: string }> }
const texts = (body: unknown) =>
  ((body as { messages: Message[] }).messages ?? [])
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join('\n')))
const toolNames = (body: unknown) =>
  ((body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name)

/**
 * Types `typed` and waits until the `/` menu lists `pattern`. The menu is computed per keystroke,
 * so while the server has not (re)listed yet the last character is typed again.
 */
async function menuShows(s: TuiSession, typed: string, pattern: RegExp): Promise<void> {
  s.type(typed)
  const deadline = Date.now() + 20_000
  for (;;) {
    try {
      await s.waitFor(pattern, 500)
      return
    } catch (error) {
      if (Date.now() > deadline) throw error
      s.keys('BSpace')
      s.type(typed.slice(-1))
    }
  }
}

describe('MCP list_changed in the TUI', () => {
  it('follows a server whose prompts, tools and resources change without a restart', { timeout: 90_000 }, async () => {
    const ws = workspace()
    writeFileSync(
      join(ws.home, 'settings.yaml'),
      `mcpServers:\n  changing:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(changing)}]\n`,
    )
    session = await TuiSession.start({
      ws,
      steps: [
        {
          toolCalls: [
            { id: 'c1', name: 'mcp__changing__add_prompt', arguments: { name: 'fresh' } },
            { id: 'c2', name: 'mcp__changing__add_tool', arguments: { name: 'fresh_tool' } },
            { id: 'c3', name: 'mcp__changing__add_resource', arguments: { name: 'fresh-doc' } },
          ],
        },
        { text: 'Added them all.' },
        { text: 'Cats noted.' },
        { text: 'Read it.' },
      ],
    })
    const s = session
    await s.waitFor(/workspace-write/)
    // The server's first prompt is in the `/` menu once it connected.
    await menuShows(s, '/mcp__chan', /mcp__changing__hello/)
    // (No Escape: an Escape followed at once by a letter reads as Alt+letter.)
    for (let i = 0; i < '/mcp__chan'.length; i++) s.keys('BSpace')
    await s.waitFor((screen) => !screen.includes('/mcp__chan'))

    s.type('add a prompt, a tool and a resource')
    s.keys('Enter')
    await s.waitFor(/Added them all\./)
    expect(s.server.requests).toHaveLength(2)

    // prompts/list_changed: the new prompt is in the menu, and runs with its argument.
    await menuShows(s, '/mcp__changing__fr', /mcp__changing__fresh/)
    s.type('esh topic=cats')
    await s.waitFor(/\/mcp__changing__fresh topic=cats/)
    s.keys('Enter')
    await s.waitFor(/Cats noted\./)
    const third = s.server.requests[2].body
    expect(texts(third)).toContain('Prompt fresh about cats.')
    // tools/list_changed: the new tool is offered from the next request on.
    expect(toolNames(third)).toContain('mcp__changing__fresh_tool')

    // The new resource is in the `@` menu and a pick mentions it. (Typing it out and pressing Enter
    // raced the menu's debounce: on a loaded machine the menu was open and took the Enter.)
    s.type('read @changing:fixture://fresh-d')
    await s.waitFor(/changing:fixture:\/\/fresh-doc/)
    s.keys('Tab')
    await s.waitFor((screen) => screen.includes('read @changing:fixture://fresh-doc'))
    s.keys('Enter')
    await s.waitFor(/Read it\./)
    expect(texts(s.server.requests[3].body)).toContain(
      '<resource server="changing" uri="fixture://fresh-doc">\nresource fresh-doc\n</resource>',
    )
  })
})
