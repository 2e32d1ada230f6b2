// The skills of the folder in the TUI's `/` menu, through the real `dsh` in tmux with the mock
// model: `/` lists a user-only skill with its marker; running `/<skill> request` sends the skill's
// body and the request as the user's message.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, it, vi } from 'vitest'
import { TuiSession, killServer, workspace } from '@dsh/cli-testkit/tui'

vi.setConfig({ testTimeout: 45_000 })
afterAll(() => killServer())

it('lists the folder\'s skills in the "/" menu, user-only marked, and runs one', async () => {
  const ws = workspace()
  mkdirSync(join(ws.cwd, '.claude/skills/rotate-keys'), { recursive: true })
  writeFileSync(
    join(ws.cwd, '.claude/skills/rotate-keys/SKILL.md'),
    '---\nname: rotate-keys\ndescription: Rotate the keys.\ndisable-model-invocation: true\n---\nRotate every key now.\n',
  )
  const s = await TuiSession.start({ ws, steps: [{ text: 'Keys rotated.' }] })
  try {
    await s.waitFor(/workspace-write/)
    s.type('/rot')
    await s.waitFor(/rotate-keys\s+Skill: \(user only\) Rotate the keys\./)
    s.keys('BSpace', 'BSpace', 'BSpace', 'BSpace')
    await s.waitFor((screen) => !/Skill: \(user only\)/.test(screen))
    s.paste('/rotate-keys twice')
    await s.waitFor(/\/rotate-keys twice/)
    s.keys('Enter')
    await s.waitFor(/Keys rotated\./)
    const body = JSON.stringify(s.server.requests.at(-1)!.body)
    expect(body).toContain('Rotate every key now.\\n\\ntwice')
  } finally {
    await s.close()
  }
})
