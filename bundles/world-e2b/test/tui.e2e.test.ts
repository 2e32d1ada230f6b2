// End-to-end: a TUI session in the e2b world (real bin in tmux, stand-in E2B, mock model). When
// the user leaves, the sandbox's change comes back as a patch and a panel asks: apply it to the
// local tree, or keep only the patch file. The local tree changes only on "apply".
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { TuiSession, killServer, workspace } from '@dsh/cli-testkit/tui'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
const open: TuiSession[] = []
beforeAll(async () => {
  standin = await startE2bStandin()
})
afterEach(async () => {
  for (const s of open.splice(0)) await s.close()
})
afterAll(async () => {
  killServer()
  await standin.close()
})

const steps = [
  { toolCalls: [{ name: 'write', arguments: { file_path: 'added.txt', content: 'from the sandbox\n' } }] },
  { text: 'Wrote it remotely.' },
]

async function session() {
  const ws = workspace({ 'notes.txt': 'local\n' })
  const tui = await TuiSession.start({
    steps,
    ws,
    args: ['--profile', 'tui', '--world', 'e2b', 'write a file'],
    env: standin.env,
  })
  open.push(tui)
  await tui.waitFor(/Wrote it remotely\./, 45_000)
  // The sandbox wrote it; the local tree does not have it yet.
  expect(existsSync(join(ws.cwd, 'added.txt'))).toBe(false)
  tui.type('/exit')
  tui.keys('Enter')
  const panel = await tui.settled(/The E2B sandbox i[0-9a-f]+ changed added\.txt/, 30_000)
  expect(panel).toContain(`Apply it to ${ws.cwd}`)
  expect(panel).toContain('Keep the patch file only')
  return { tui, ws }
}

describe('dsh --world e2b (TUI): leaving asks before applying the change', () => {
  it('"apply" applies the patch to the local tree', async () => {
    const { tui, ws } = await session()
    tui.keys('Enter')
    const end = await tui.waitFor(/\[exited \d+\]/, 30_000)
    expect(end).toMatch(/\[exited 0\]/)
    expect(tui.history().replace(/\n/g, '')).toMatch(/dsh: applied the patch \S+ to \S+ \(added\.txt\)/)
    expect(readFileSync(join(ws.cwd, 'added.txt'), 'utf8')).toBe('from the sandbox\n')
  }, 90_000)

  it('"keep the patch file only" leaves the tree alone and names the patch', async () => {
    const { tui, ws } = await session()
    tui.keys('Down')
    tui.keys('Enter')
    const end = await tui.waitFor(/\[exited \d+\]/, 30_000)
    expect(end).toMatch(/\[exited 0\]/)
    const saved = /patch saved to (\S+) \(review it/.exec(tui.history().replace(/\n/g, ''))
    expect(saved, tui.history()).not.toBeNull()
    expect(existsSync(join(ws.cwd, 'added.txt'))).toBe(false)
    expect(readFileSync((saved as RegExpExecArray)[1], 'utf8')).toContain('+from the sandbox')
  }, 90_000)
})
