// The sections the service contributes itself (working rules, environment, session date): their
// facts, their place in the stable-first layout, per-session pinning, and config overrides.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir, type as osType } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import SystemPrompt, { BUILTIN_SECTIONS, gitRepository } from '@dsh/system-prompt'

let root: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-system-prompt-'))
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

async function boot(config: Record<string, unknown> = {}) {
  const ctx = new Context()
  await ctx.plugin(SystemPrompt, config as never)
  return ctx
}

const DAY_1 = new Date(2026, 0, 2, 23, 30).getTime()
const DAY_2 = new Date(2026, 0, 3, 8, 0).getTime()

describe('built-in sections', () => {
  it('tell the model its working directory, git flag, platform, shell and date', async () => {
    const repo = join(root, 'repo')
    mkdirSync(join(repo, 'src'), { recursive: true })
    execFileSync('git', ['init', '-q', repo])
    const plain = join(root, 'plain')
    mkdirSync(plain)
    const ctx = await boot()
    const inRepo = ctx.systemPrompt.assemble({
      provider: 'p',
      model: 'm',
      cwd: join(repo, 'src'),
      date: '2026-01-02',
    }).system
    expect(inRepo).toContain(`- Working directory: ${join(repo, 'src')}\n`)
    expect(inRepo).toContain('- Git repository: yes\n')
    expect(inRepo).toContain(`- Platform: ${osType()} `)
    expect(inRepo).toMatch(/- User shell: \S+/)
    expect(inRepo).toContain('Session date: 2026-01-02')
    const outside = ctx.systemPrompt.assemble({ provider: 'p', model: 'm', cwd: plain, date: '2026-01-02' }).system
    expect(outside).toContain('- Git repository: no\n')
    expect(gitRepository(join(repo, 'src'))).toBe(true)
  })

  it('orders stable-first: identity, working rules, tool guidance, environment, persona, then the date', async () => {
    const ctx = await boot({ identity: 'IDENTITY', persona: 'PERSONA' })
    ctx.systemPrompt.registerSection({ id: 'tool:x', order: 300, text: 'TOOL X' })
    ctx.systemPrompt.registerSection({ id: 'late', order: 5, text: 'VOLATILE', stable: false })
    const { system } = ctx.systemPrompt.assemble({ provider: 'p', model: 'm', cwd: root, date: '2026-01-02' })
    const at = (needle: string) => {
      const index = system.indexOf(needle)
      expect(index, needle).toBeGreaterThanOrEqual(0)
      return index
    }
    const order = ['IDENTITY', 'Working rules:', 'TOOL X', 'Environment:', 'PERSONA', 'VOLATILE', 'Session date:'].map(
      at,
    )
    expect(order).toEqual([...order].sort((a, b) => a - b))
    expect(ctx.systemPrompt.sections().map((s) => s.id)).toEqual([
      'dsh:working',
      'tool:x',
      'dsh:environment',
      'late',
      'dsh:date',
    ])
    expect(BUILTIN_SECTIONS.every((s) => s.stable === (s.id !== 'dsh:date'))).toBe(true)
  })

  it('pins the date to the session start, so a session keeps its prompt across midnight and resume', async () => {
    const ctx = await boot()
    const session = { events: [{ time: DAY_1 }, { time: DAY_2 }] }
    const first = ctx.systemPrompt.assemble({ provider: 'p', model: 'm', cwd: root, session }).system
    expect(first).toContain('Session date: 2026-01-02')
    // A resumed copy of the log (a new object, as after a restart) renders the same prompt.
    const resumed = { events: session.events.map((e) => ({ ...e })) }
    expect(ctx.systemPrompt.assemble({ provider: 'p', model: 'm', cwd: root, session: resumed }).system).toBe(first)
  })

  it('keeps the git flag of a session for its life in the process', async () => {
    const ctx = await boot()
    const session = { events: [{ time: DAY_1 }] }
    const before = ctx.systemPrompt.assemble({ provider: 'p', model: 'm', cwd: root, session }).system
    expect(before).toContain('- Git repository: no\n')
    execFileSync('git', ['init', '-q', root])
    expect(ctx.systemPrompt.assemble({ provider: 'p', model: 'm', cwd: root, session }).system).toBe(before)
    // A session that starts now sees the repository.
    const fresh = { events: [{ time: DAY_1 }] }
    expect(ctx.systemPrompt.assemble({ provider: 'p', model: 'm', cwd: root, session: fresh }).system).toContain(
      '- Git repository: yes\n',
    )
  })

  it('config drops or replaces any section by id, tool sections included', async () => {
    const ctx = await boot({ sections: { 'dsh:working': false, 'dsh:date': 'Today: {{date}}', 'tool:x': false } })
    ctx.systemPrompt.registerSection({ id: 'tool:x', order: 300, text: 'TOOL X' })
    const { system } = ctx.systemPrompt.assemble({ provider: 'p', model: 'm', cwd: root, date: '2026-01-02' })
    expect(system).not.toContain('Working rules:')
    expect(system).not.toContain('TOOL X')
    expect(system).toContain('Today: 2026-01-02')
    expect(system).not.toContain('Session date:')
  })

  it('a replacement text naming an unknown variable fails the plugin at load with one clear error', async () => {
    await expect(
      new Context().plugin(SystemPrompt, { sections: { 'dsh:date': 'Day {{dayy}}' } } as never),
    ).rejects.toThrow(/config\.sections\["dsh:date"\] uses unknown variable "\{\{dayy\}\}"/)
    await expect(new Context().plugin(SystemPrompt, { sections: { 'dsh:date': 3 } } as never)).rejects.toThrow()
  })
})
