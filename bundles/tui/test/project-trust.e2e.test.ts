// End-to-end: the terminal UI asks once before running what an untrusted project ships. The real
// `dsh` (tui profile) in tmux, a project `.mcp.json` whose command writes a marker: the first
// prompt shows the question with that exact command; "Trust and run" starts it (the marker
// appears) and records the consent, so the next start runs it without asking; "Not now" leaves it
// stopped.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { TuiSession, killServer, workspace } from './harness.ts'

vi.setConfig({ testTimeout: 60_000 })

let open: TuiSession[] = []
afterEach(async () => {
  for (const s of open) await s.close()
  open = []
})
afterAll(() => killServer())

const STATUS = /deepseek-official\/deepseek-v4-flash/

async function start(ws: ReturnType<typeof workspace>, steps: unknown[]) {
  const s = await TuiSession.start({ ws, steps, cols: 160, rows: 40 })
  open.push(s)
  await s.waitFor(STATUS)
  return s
}

describe('project trust in the terminal UI', () => {
  it('asks once with the exact command; a yes runs it and is remembered', async () => {
    const ws = workspace()
    const marker = join(ws.root, 'mcp-ran')
    writeFileSync(
      join(ws.cwd, '.mcp.json'),
      JSON.stringify({ mcpServers: { pwn: { command: 'sh', args: ['-c', `echo ran >> ${marker}`] } } }),
    )
    const s = await start(ws, [{ text: 'first answer' }])
    s.type('hello')
    s.keys('Enter')
    const screen = await s.waitFor(/Trust this project and run them\?/)
    expect(screen).toContain(`pwn (.mcp.json): sh -c 'echo ran >> ${marker}'`)
    expect(screen).toContain('Trust and run')
    expect(existsSync(marker)).toBe(false)
    s.keys('Enter')
    await s.waitFor(/first answer/)
    // The command is no MCP server: it exits at once, and mcp-client's retry policy may start it
    // again before the turn ends (under load it did). What matters: nothing before the answer.
    expect(readFileSync(marker, 'utf8')).toMatch(/^(ran\n)+$/)
    expect(readFileSync(join(ws.home, 'trusted-projects.json'), 'utf8')).toContain(ws.cwd)
    await s.close()
    open = []
    // How often it ran depends on the retry policy and the machine's speed, not on trust: count.
    const ranBefore = readFileSync(marker, 'utf8').split('\n').filter(Boolean).length

    // The next start runs it at once: the marker grows before the first prompt, and no question comes.
    const again = await start(ws, [{ text: 'second answer' }])
    again.type('hello')
    again.keys('Enter')
    const next = await again.waitFor(/second answer/)
    expect(next).not.toContain('Trust this project')
    const ranAfter = readFileSync(marker, 'utf8').split('\n').filter(Boolean).length
    expect(ranAfter).toBeGreaterThan(ranBefore)
  })

  it('"Not now" leaves the project\'s server stopped and records nothing', async () => {
    const ws = workspace()
    const marker = join(ws.root, 'mcp-ran')
    writeFileSync(
      join(ws.cwd, '.mcp.json'),
      JSON.stringify({ mcpServers: { pwn: { command: 'sh', args: ['-c', `echo ran >> ${marker}`] } } }),
    )
    const s = await start(ws, [{ text: 'answer without it' }])
    s.type('hello')
    s.keys('Enter')
    await s.waitFor(/Trust this project and run them\?/)
    s.keys('Down')
    s.keys('Enter')
    await s.waitFor(/answer without it/)
    expect(existsSync(marker)).toBe(false)
    expect(existsSync(join(ws.home, 'trusted-projects.json'))).toBe(false)
  })
})
