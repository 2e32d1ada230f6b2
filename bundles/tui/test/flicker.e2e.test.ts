// The flicker check: the real `dsh` TUI in a real PTY (node-pty) while 2,000 lines of model output
// stream. Every byte it writes is kept and fed to a headless xterm: after the first frame the
// stream holds no full-screen clear and no scrollback clear, and the emulated screen at the end
// equals the expected final screen.
import { mkdtempSync, mkdirSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import pty from 'node-pty'
import xterm from '@xterm/headless'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { DSH_BIN } from '@dsh/cli-testkit'

const COLS = 100
const ROWS = 30
const LINES = 2000
/** Items per paragraph; a blank line separates paragraphs. */
const PER_BLOCK = 10

const item = (n: number) => `- line ${n} of the streamed reply`

function reply(): string[] {
  const parts: string[] = []
  for (let n = 1; n <= LINES; n++) {
    parts.push(`${item(n)}\n`)
    if (n % PER_BLOCK === 0 && n < LINES) parts.push('\n')
  }
  return parts
}

let server: MockServer | undefined
let term: pty.IPty | undefined
afterEach(async () => {
  term?.kill()
  term = undefined
  await server?.close()
  server = undefined
})

async function until(test: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('streaming 2,000 lines', () => {
  it('writes no full-screen or scrollback clear after the first frame, and ends on the expected screen', async () => {
    server = await startMockServer({
      steps: [
        { events: reply().map((text) => ({ text })), chunkDelayMs: 1, usage: { prompt: 1000, completion: 5000 } },
      ] as never,
    })
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-tui-flicker-')))
    const home = join(root, 'home')
    const cwd = join(root, 'work')
    mkdirSync(home)
    mkdirSync(cwd)
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: root,
      TERM: 'xterm-256color',
      DSH_HOME: home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    }
    term = pty.spawn(process.execPath, [DSH_BIN, '--profile', 'tui'], {
      name: 'xterm-256color',
      cols: COLS,
      rows: ROWS,
      cwd,
      env,
    })
    const chunks: string[] = []
    term.onData((data) => chunks.push(data))
    const output = () => chunks.join('')

    await until(() => output().includes('workspace-write'), 'the first frame')
    const firstFrameEnd = output().length
    term.write('stream please')
    await new Promise((r) => setTimeout(r, 200))
    term.write('\r')
    // The bullet is coloured, so the raw stream is searched for the text after it.
    await until(
      () => output().includes(item(LINES).slice(2)) && output().includes('↓5.0k'),
      'the last line and the final usage',
      120_000,
    )
    // Let the last frames land.
    await new Promise((r) => setTimeout(r, 500))
    const all = output()

    const after = all.slice(firstFrameEnd)
    expect(after.length).toBeGreaterThan(LINES * 10)
    expect(after).not.toContain('\x1b[2J') // erase the whole screen
    expect(after).not.toContain('\x1b[3J') // erase the scrollback
    expect(after).not.toContain('\x1bc') // full reset
    // Frames are wrapped in synchronized output (DEC mode 2026).
    expect(after).toContain('\x1b[?2026h')

    const screen = new xterm.Terminal({ cols: COLS, rows: ROWS, scrollback: 10_000, allowProposedApi: true })
    await new Promise<void>((resolve) => screen.write(all, resolve))
    const buffer = screen.buffer.active
    const visible: string[] = []
    for (let row = 0; row < ROWS; row++) visible.push(buffer.getLine(buffer.baseY + row)?.translateToString(true) ?? '')

    // Bottom up: status line, editor between two rules, the idle activity area (two blank lines),
    // then the end of the reply, its paragraphs separated by blank lines.
    const rule = '─'.repeat(COLS)
    const bottom = [rule, '', rule]
    const status = `deepseek-official/deepseek-v4-flash · workspace-write · ctx 0% · ↑1.0k ↓5.0k · ${cwd.replace(root, '~')}`
    const replyLines = reply().join('').replace(/\n$/, '').split('\n')
    const transcript = replyLines.slice(-(ROWS - 2 - bottom.length - 1))
    const expected = [...transcript, '', '', ...bottom, status.slice(0, COLS)]
    expect(visible.map((l) => l.replace(/\s+$/, ''))).toEqual(expected.map((l) => l.replace(/\s+$/, '')))
    // The scrollback keeps the whole reply: every line is there once, in order.
    const history: string[] = []
    for (let row = 0; row < buffer.length; row++)
      history.push(buffer.getLine(row)?.translateToString(true).trimEnd() ?? '')
    const items = history.filter((l) => l.startsWith('- line '))
    expect(items).toHaveLength(LINES)
    expect(items[0]).toBe(item(1))
    expect(items[LINES - 1]).toBe(item(LINES))
  }, 180_000)
})
