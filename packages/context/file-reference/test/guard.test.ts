// @file mentions are read by the harness. In a confining mode a mention that leads (through a link
// in the session directory) to what the sandbox hides, dsh's credential files, is not included.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { Context } from 'cordis'
import SandboxPolicyService from '@dsh/sandbox-policy'
import { expandMentions } from '../src/index.ts'

let root: string | undefined
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true })
  root = undefined
})

const KEY = 'sk-planted-mention-not-a-real-key'
const text = (m: { content: unknown }) => String(m.content)

it('a mention leading to the credentials is refused in a confining mode and included in danger-full-access', async () => {
  // The session directory holds the dsh home (dsh started in the user's home directory).
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-mention-guard-')))
  const home = join(root, '.dsh')
  mkdirSync(home)
  writeFileSync(join(home, '.credentials.yaml'), `deepseek: ${KEY}\n`)
  writeFileSync(join(root, 'notes.md'), 'alpha\n')
  symlinkSync(join(home, '.credentials.yaml'), join(root, 'readme.md'))
  const ctx = new Context()
  ctx.provide('homePaths', { home } as never)
  await ctx.plugin(SandboxPolicyService, {})
  const config = { maxBytes: 10_000, maxMentions: 10 }
  const confined = await expandMentions(
    root,
    'see @readme.md and @notes.md',
    config,
    ctx.sandboxPolicy.resolve({ cwd: root }),
  )
  expect(confined.map(text).join('\n')).not.toContain(KEY)
  expect(text(confined[0])).toMatch(
    /unavailable="unreadable">The user mentioned @readme\.md, but it could not be read \(not read: it leads to .*\.credentials\.yaml, which is under .*dsh's credentials/,
  )
  expect(text(confined[1])).toContain('alpha')
  const open = await expandMentions(root, 'see @readme.md', config, {
    mode: 'danger-full-access',
    workspaceRoot: root,
    writableRoots: [],
    network: true,
  })
  expect(text(open[0])).toContain(KEY)
})
