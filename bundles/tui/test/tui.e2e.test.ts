// End-to-end: the real `dsh` bin with the tui profile inside real tmux, against the mock model
// server. Every assertion reads the screen tmux shows (capture-pane) after real key presses.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'

vi.setConfig({ testTimeout: 45_000 })
import { startMockServer } from '@dsh/llm-mock-server'
import { TuiSession, displayWidth, killServer, workspace } from './harness.ts'

let open: TuiSession[] = []
const start = async (...args: Parameters<typeof TuiSession.start>) => {
  const s = await TuiSession.start(...args)
  open.push(s)
  return s
}
afterEach(async () => {
  for (const s of open) await s.close()
  open = []
})
afterAll(() => killServer())

const STATUS = /deepseek-official\/deepseek-v4-flash/

describe('dsh --profile tui in tmux', () => {
  it('streams a reply in place; the final screen shows the Markdown answer and the status line', async () => {
    const s = await start({
      steps: [
        {
          reasoning: 'Thinking about capitals.',
          text: '# Answer\n\nThe capital of France is **Paris**.\n\n- first point\n- second point',
          chunkDelayMs: 5,
        },
      ],
    })
    await s.waitFor(STATUS)
    s.type('capital of France?')
    s.keys('Enter')
    const screen = await s.settled(/second point/)
    expect(screen).toContain('› capital of France?')
    expect(screen).toMatch(/✻ Thought/)
    expect(screen).toContain('The capital of France is Paris.')
    expect(screen).not.toContain('**Paris**')
    expect(screen).toMatch(/- first point/)
    expect(screen).toMatch(/workspace-write/)
    expect(s.server.requests).toHaveLength(1)
    expect(JSON.stringify(s.server.requests[0].body)).toContain('capital of France?')
  })

  it('shows a bash card with its tail and exit code, and an edit as a coloured diff', async () => {
    const ws = workspace({ 'notes.txt': 'alpha\nbeta\n' })
    const s = await start({
      ws,
      steps: [
        { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
        {
          toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } }],
        },
        { toolCalls: [{ name: 'bash', arguments: { command: 'seq 1 20; echo finished', description: 'count' } }] },
        { text: 'All done.' },
      ],
    })
    await s.waitFor(STATUS)
    s.type('edit and count')
    s.keys('Enter')
    const screen = await s.settled(/All done\./)
    expect(readFileSync(join(ws.cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')
    expect(screen).toMatch(/● read notes\.txt/)
    expect(screen).toMatch(/read 2 lines/)
    expect(screen).toMatch(/● edit notes\.txt/)
    expect(screen).toMatch(/-beta/)
    expect(screen).toMatch(/\+gamma/)
    expect(screen).toMatch(/● bash seq 1 20; echo finished/)
    // The tail: the last lines of the output, the earlier ones counted, and the exit code.
    expect(screen).toContain('finished')
    expect(screen).toMatch(/lines above/)
    expect(screen).not.toMatch(/^\s+3$/m)
    expect(screen).toMatch(/exit 0/)
    // Ctrl+O expands every card: the whole bash output is shown.
    s.keys('C-o')
    const expanded = await s.waitFor(/^\s+3$/m)
    expect(expanded).toMatch(/^\s+19$/m)
  })

  it('asks for approval in a panel answered by keys: n denies, y allows once', async () => {
    const s = await start({
      steps: [
        {
          toolCalls: [
            {
              name: 'bash',
              arguments: {
                command: 'echo outside > escaped.txt',
                description: 'write',
                sandbox_escalation: { justification: 'needs to write' },
              },
            },
          ],
        },
        { text: 'Denied, as you said.' },
        {
          toolCalls: [
            {
              name: 'bash',
              arguments: {
                command: 'echo approved-run',
                description: 'echo',
                sandbox_escalation: { justification: 'please' },
              },
            },
          ],
        },
        { text: 'Ran it.' },
      ],
    })
    await s.waitFor(STATUS)
    s.type('write outside')
    s.keys('Enter')
    let screen = await s.waitFor(/Allow this action\?/)
    expect(screen).toMatch(/y\) Yes, allow once/)
    expect(screen).toMatch(/a\) Yes, and allow this for the rest of the session/)
    expect(screen).toMatch(/n\) No, deny/)
    // Enter alone picks nothing: the panel stays.
    s.keys('Enter')
    await new Promise((r) => setTimeout(r, 300))
    expect(s.screen()).toMatch(/Allow this action\?/)
    s.type('n')
    screen = await s.waitFor(/Denied, as you said\./)
    expect(screen).not.toMatch(/Allow this action\?/)
    const denied = JSON.stringify(s.server.requests[1].body)
    expect(denied).toMatch(/reject|denied/i)
    s.type('again')
    s.keys('Enter')
    await s.waitFor(/Allow this action\?/)
    s.type('y')
    screen = await s.waitFor(/Ran it\./)
    expect(screen).toContain('approved-run')
    expect(screen).toMatch(/exit 0/)
  })

  it('Esc cancels a running turn; the editor takes the next prompt', async () => {
    const s = await start({
      steps: [
        { events: [{ text: 'streaming ' }, { forever: { text: 'more ', intervalMs: 20 } }] },
        { text: 'Second answer.' },
      ],
    })
    await s.waitFor(STATUS)
    s.type('go on forever')
    s.keys('Enter')
    await s.waitFor(/Working…/)
    await s.waitFor(/streaming more/)
    s.keys('Escape')
    const screen = await s.waitFor(/cancelled/)
    expect(screen).not.toMatch(/Working…/)
    s.type('next')
    s.keys('Enter')
    await s.waitFor(/Second answer\./)
  })

  it('completes / commands from the shared registry and the TUI', async () => {
    const s = await start({ steps: [] })
    await s.waitFor(STATUS)
    s.type('/')
    let screen = await s.waitFor(/permissions\s+Pick the permission mode/)
    expect(screen).toMatch(/model\s+Pick the model/)
    s.type('he')
    screen = await s.waitFor(/help\s+List the available commands/)
    s.keys('Tab')
    await s.waitFor((text) => /^ \/help\s*$/m.test(text))
    s.keys('Enter')
    screen = await s.waitFor(/\/compact/)
    expect(screen).toMatch(/\/help\s+List the available commands/)
    expect(s.server.requests).toHaveLength(0)
  })

  it('completes @ file mentions from the working directory', async () => {
    const ws = workspace({ 'notes.txt': 'a\n', 'other.md': 'b\n' })
    const s = await start({ ws, steps: [{ text: 'Read it.' }] })
    await s.waitFor(STATUS)
    s.type('look at @note')
    await s.waitFor(/notes\.txt/)
    s.keys('Tab')
    await s.waitFor((t) => /look at @notes\.txt/.test(t))
    s.keys('Enter')
    await s.waitFor(/Read it\./)
    expect(JSON.stringify(s.server.requests[0].body)).toContain('look at @notes.txt')
  })

  it('resumes a stored session from the picker (-r) and with -c', async () => {
    const ws = workspace()
    const server = await startMockServer({
      steps: [{ text: 'First reply.' }, { text: 'Reply after resume.' }, { text: 'Reply after continue.' }] as never,
    })
    try {
      const first = await start({ ws, server })
      await first.waitFor(STATUS)
      first.type('remember the word zebra')
      first.keys('Enter')
      await first.waitFor(/First reply\./)
      first.keys('C-c')
      first.keys('C-c')
      await first.waitFor(/\[exited 0\]/)

      const picker = await start({ ws, server, args: ['--profile', 'tui', '-r'] })
      let screen = await picker.waitFor(/Resume a session/)
      expect(screen).toMatch(/remember the word zebra/)
      expect(screen).toMatch(/1 turn/)
      picker.keys('Enter')
      screen = await picker.waitFor(/First reply\./)
      expect(screen).toContain('› remember the word zebra')
      picker.type('and now?')
      picker.keys('Enter')
      await picker.waitFor(/Reply after resume\./)
      expect(JSON.stringify(server.requests[1].body)).toContain('remember the word zebra')
      picker.type('/exit')
      picker.keys('Enter')
      await picker.waitFor(/\[exited 0\]/)

      const cont = await start({ ws, server, args: ['--profile', 'tui', '-c'] })
      screen = await cont.waitFor(/Reply after resume\./)
      expect(screen).toContain('› and now?')
      cont.type('third')
      cont.keys('Enter')
      await cont.waitFor(/Reply after continue\./)
    } finally {
      await server.close()
    }
  }, 90_000)

  it('stays correct when the terminal is resized mid-stream', async () => {
    const words = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ')
    const s = await start({ steps: [{ text: `${words}\n\nThe end marker.`, chunkDelayMs: 15 }], cols: 100, rows: 30 })
    await s.waitFor(STATUS)
    s.type('talk')
    s.keys('Enter')
    await s.waitFor(/word20/)
    s.resize(60, 20)
    const screen = await s.settled(/The end marker\./)
    const lines = screen.replace(/\n$/, '').split('\n')
    expect(lines.length).toBe(20)
    for (const line of lines) expect(displayWidth(line.replace(/\s+$/, ''))).toBeLessThanOrEqual(60)
    // The bottom of the screen is the live area at the new width: the reply's end, editor, status.
    expect(
      lines.some((l) => l.startsWith('deepseek-official/')),
      screen,
    ).toBe(true)
    expect(screen).toMatch(/word119/)
    const rule = lines.find((l) => l.startsWith('─'))!
    expect(rule.replace(/\s+$/, '')).toHaveLength(60)
  })

  it('aligns CJK text: a table with wide characters keeps its columns straight', async () => {
    const table =
      '| 名前 | 說明 |\n| --- | --- |\n| 東京 | 日本の首都 |\n| Paris | capital |\n\n中文段落：宽字符占两列。'
    const s = await start({ steps: [{ text: table }] })
    await s.waitFor(STATUS)
    s.type('表')
    s.keys('Enter')
    const screen = await s.settled(/宽字符占两列/)
    const rows = screen.split('\n').filter((l) => l.includes('│') && /東京|Paris|名前/.test(l))
    expect(rows.length).toBe(3)
    // Every row has its separators at the same display columns.
    const columns = (line: string) => {
      const at: number[] = []
      let col = 0
      for (const ch of line) {
        if (ch === '│') at.push(col)
        col += displayWidth(ch)
      }
      return at
    }
    const first = columns(rows[0])
    expect(first.length).toBeGreaterThanOrEqual(2)
    for (const row of rows) expect(columns(row)).toEqual(first)
    expect(screen).toContain('› 表')
  })
})

describe('panels and pickers', () => {
  it("asks the model's question in a panel and sends the picked answer back", async () => {
    const s = await start({
      steps: [
        {
          toolCalls: [
            {
              name: 'ask_user_question',
              arguments: {
                questions: [
                  {
                    id: 'db',
                    question: 'Which database should I use?',
                    options: [{ label: 'SQLite' }, { label: 'Postgres' }],
                  },
                ],
              },
            },
          ],
        },
        { text: 'Going with your choice.' },
      ],
    })
    await s.waitFor(STATUS)
    s.type('set up storage')
    s.keys('Enter')
    const screen = await s.waitFor(/Which database should I use\?/)
    expect(screen).toMatch(/SQLite/)
    expect(screen).toMatch(/Postgres/)
    s.keys('Down')
    s.keys('Enter')
    await s.waitFor(/Going with your choice\./)
    expect(JSON.stringify(s.server.requests[1].body)).toMatch(/selected: Postgres/)
  })

  it('switches the model and effort with /model, and the permission mode with /permissions', async () => {
    const s = await start({ steps: [{ text: 'ok' }] })
    await s.waitFor(STATUS)
    s.type('/model')
    s.keys('Enter')
    let screen = await s.waitFor(/Model/)
    await s.waitFor(/deepseek-v4-pro/)
    s.type('v4-pro')
    await s.waitFor(/filter: v4-pro/)
    s.keys('Enter')
    screen = await s.waitFor(/Reasoning effort/)
    s.type('high')
    s.keys('Enter')
    screen = await s.waitFor(/deepseek-official\/deepseek-v4-pro \(high\)/)
    s.type('/permissions')
    s.keys('Enter')
    await s.waitFor(/Permission mode/)
    s.type('read-only')
    s.keys('Enter')
    screen = await s.waitFor(/deepseek-v4-pro \(high\) · read-only/)
    s.type('hello')
    s.keys('Enter')
    await s.waitFor(/^ok$/m)
    const body = s.server.requests[0].body as { model: string }
    expect(body.model).toBe('deepseek-v4-pro')
    // Esc leaves a picker without changing anything.
    s.type('/permissions')
    s.keys('Enter')
    await s.waitFor(/Permission mode/)
    s.keys('Escape')
    screen = await s.settled((t) => !/Permission mode/.test(t))
    expect(screen).toMatch(/· read-only/)
  })

  it('collapses a large paste to a marker and sends the whole text', async () => {
    const s = await start({ steps: [{ text: 'Got the paste.' }] })
    await s.waitFor(STATUS)
    const pasted = Array.from({ length: 30 }, (_, i) => `pasted line ${i + 1}`).join('\n')
    s.paste(pasted)
    await s.waitFor(/\[paste #1 \+30 lines\]/)
    s.keys('Enter')
    await s.waitFor(/Got the paste\./)
    const sent = JSON.stringify(s.server.requests[0].body)
    expect(sent).toContain('pasted line 1\\n')
    expect(sent).toContain('pasted line 30')
  })

  it('Ctrl+C in an approval panel denies, never allows', async () => {
    const s = await start({
      steps: [
        {
          toolCalls: [
            {
              name: 'bash',
              arguments: { command: 'echo x > y.txt', description: 'w', sandbox_escalation: { justification: 'j' } },
            },
          ],
        },
        { text: 'Understood.' },
      ],
    })
    await s.waitFor(STATUS)
    s.type('go')
    s.keys('Enter')
    await s.waitFor(/Allow this action\?/)
    s.keys('C-c')
    await s.waitFor(/Understood\./)
    expect(JSON.stringify(s.server.requests[1].body)).toMatch(/the user refused to run this command/)
  })

  it('queues a message typed while a turn runs and sends it within that turn', async () => {
    const s = await start({
      steps: [{ text: 'working on the first', chunkDelayMs: 0, delayMs: 1500 }, { text: 'Saw the follow-up.' }],
    })
    await s.waitFor(STATUS)
    s.type('first')
    s.keys('Enter')
    await s.waitFor(/Working…/)
    s.type('follow-up note')
    s.keys('Enter')
    await s.waitFor(/queued › follow-up note/)
    const screen = await s.settled(/Saw the follow-up\./)
    expect(screen).not.toMatch(/queued ›/)
    expect(screen).toContain('› follow-up note')
    expect(JSON.stringify(s.server.requests[1].body)).toContain('follow-up note')
  })
})

describe('terminal restore', () => {
  it('leaves cooked mode and a visible cursor after Ctrl+C twice', async () => {
    const s = await start({ steps: [] })
    await s.waitFor(STATUS)
    s.keys('C-c')
    await s.waitFor(/Press Ctrl\+C again to exit/)
    s.keys('C-c')
    const screen = await s.waitFor(/\[exited 0\] \[modes: .+\]/)
    expect(screen).toMatch(/\[modes: icanon echo ?\]/)
    expect(s.cursorAndAltScreen()).toEqual({ cursor: '1', alternate: '0' })
  })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`restores the terminal when killed with ${signal} mid-stream`, async () => {
      const s = await start({
        steps: [{ events: [{ text: 'streaming ' }, { forever: { text: 'more ', intervalMs: 20 } }] }],
      })
      await s.waitFor(STATUS)
      s.type('go')
      s.keys('Enter')
      await s.waitFor(/streaming more/)
      expect(s.cursorAndAltScreen().cursor).toBe('0')
      process.kill(s.dshPid(), signal)
      const screen = await s.waitFor(/\[exited \d+\] \[modes: .+\]/)
      expect(screen).toMatch(/\[modes: icanon echo ?\]/)
      expect(s.cursorAndAltScreen()).toEqual({ cursor: '1', alternate: '0' })
    })
  }
})
