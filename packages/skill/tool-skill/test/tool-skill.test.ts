import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SkillRegistry from '@dsh/skill'
import HomePaths from '@dsh/home-paths'
import * as SkillFilesystem from '@dsh/skill-filesystem'
import CommandRegistry from '@dsh/commands'
import * as ToolSkill from '../src/index.ts'
import { CATALOG_HEADER, catalog } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

function project(skills: Record<string, string>): { cwd: string; home: string } {
  const root = mkdtempSync(join(tmpdir(), 'dsh-tool-skill-'))
  const cwd = join(root, 'project')
  for (const [dir, text] of Object.entries(skills)) {
    mkdirSync(join(cwd, '.claude/skills', dir), { recursive: true })
    writeFileSync(join(cwd, '.claude/skills', dir, 'SKILL.md'), text)
  }
  mkdirSync(cwd, { recursive: true })
  return { cwd, home: join(root, 'home') }
}

async function boot(cwd: string, home: string, script: unknown[] = [], extra: Array<[unknown, unknown?]> = []) {
  harness = await createHarness({
    cwd,
    script: script as never,
    plugins: [[HomePaths, { home }], [SkillRegistry], [SkillFilesystem, {}], ...extra, [ToolSkill, { cwd }]] as never,
  })
  return harness
}

const RELEASE =
  '---\nname: release\ndescription: How to cut a release of this project.\n---\n1. Bump the version.\n2. Run scripts/release.sh.\n'

describe('@dsh/tool-skill', () => {
  it('lists skills in the system prompt and loads one through the skill tool', async () => {
    const { cwd, home } = project({
      release: RELEASE,
      broken: '---\nname: broken\n---\n',
      secret: '---\nname: secret\ndescription: User only.\ndisable-model-invocation: true\n---\nx',
    })
    writeFileSync(join(cwd, '.claude/skills/release/checklist.md'), '- [ ] tag')
    const addLater = () => {
      mkdirSync(join(cwd, '.claude/skills/later'), { recursive: true })
      writeFileSync(
        join(cwd, '.claude/skills/later/SKILL.md'),
        '---\nname: later\ndescription: Added mid-session.\n---\nx',
      )
    }
    const h = await boot(cwd, home, [
      () => (addLater(), { toolCalls: [{ name: 'skill', arguments: { name: 'release' } }] }),
      { toolCalls: [{ name: 'skill', arguments: { name: 'nope' } }] },
      { text: 'done' },
    ])
    await h.prompt('cut a release')
    const system = h.model.requests[0].system!
    expect(system).toContain(`${CATALOG_HEADER}\n- release: How to cut a release of this project.`)
    expect(system).not.toContain('broken')
    expect(system).not.toContain('secret')
    expect(h.model.requests[0].tools!.map((t) => t.name)).toContain('skill')
    const results = h.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => e.data as { message: { content: { text: string }[] }; error?: { code: string } })
    expect(results[0].message.content[0].text).toBe(
      `Skill "release" (${join(cwd, '.claude/skills/release/SKILL.md')}):\n\n1. Bump the version.\n2. Run scripts/release.sh.\n\nSkill directory: ${join(cwd, '.claude/skills/release')}\nFiles in it: checklist.md`,
    )
    expect(results[1].error?.code).toBe('SKILL_NOT_FOUND')
    expect(results[1].message.content[0].text).toContain('Available skills: later, release.')
    // The catalog is pinned for the session: a skill added mid-session does not change the prompt.
    expect(h.model.requests[2].system).toBe(system)
  })

  it('offers nothing when there are no skills', async () => {
    const { cwd, home } = project({})
    const h = await boot(cwd, home, [{ text: 'hi' }])
    await h.prompt('hello')
    expect(h.model.requests[0].tools!.map((t) => t.name)).not.toContain('skill')
    expect(h.model.requests[0].system).not.toContain('Skills:')
  })

  it('runs a skill as a /command: the body becomes the user message', async () => {
    const { cwd, home } = project({ release: RELEASE })
    const h = await boot(cwd, home, [{ text: 'releasing' }], [[CommandRegistry, {}]])
    expect(h.ctx.commands.get('release', h.agent)).toMatchObject({
      description: 'Skill: How to cut a release of this project.',
      source: 'skill',
    })
    const result = await h.ctx.commands.dispatch(h.agent, '/release for version 2.0')
    expect(result).toMatchObject({ handled: true, ok: true, output: 'Running the skill "release".' })
    await h.agent.idle()
    const message = h.session.events.find((e) => e.type === 'user/message')!.data as { content: { text: string }[] }
    expect(message.content[0].text).toBe('1. Bump the version.\n2. Run scripts/release.sh.\n\nfor version 2.0')
  })

  it("offers the skills of the agent's own directory as commands, user-only ones marked", async () => {
    const load = project({})
    const { cwd } = project({
      release: RELEASE,
      secret: '---\nname: secret\ndescription: User only.\ndisable-model-invocation: true\n---\nThe secret steps.',
      Weird_Name: '---\nname: Weird_Name\ndescription: Not a command name.\n---\nx',
    })
    // The plugin loads in a directory without skills; the agent works in another one.
    harness = await createHarness({
      cwd,
      script: [{ text: 'ok' }] as never,
      plugins: [
        [HomePaths, { home: load.home }],
        [SkillRegistry],
        [SkillFilesystem, {}],
        [CommandRegistry, {}],
        [ToolSkill, { cwd: load.cwd }],
      ] as never,
    })
    const h = harness
    const listed = h.ctx.commands.list(h.agent).filter((c) => c.source === 'skill')
    expect(listed).toEqual([
      {
        name: 'release',
        description: 'Skill: How to cut a release of this project.',
        usage: '[request]',
        source: 'skill',
      },
      { name: 'secret', description: 'Skill: (user only) User only.', usage: '[request]', source: 'skill' },
    ])
    expect(await h.ctx.commands.dispatch(h.agent, '/secret')).toMatchObject({ ok: true })
    await h.agent.idle()
    const message = h.session.events.find((e) => e.type === 'user/message')!.data as { content: { text: string }[] }
    expect(message.content[0].text).toBe('The secret steps.')
  })

  it('cuts a long catalog and counts what it left out', () => {
    const skills = Array.from({ length: 40 }, (_, i) => ({
      name: `s${i}`,
      description: 'x'.repeat(80),
      provider: 'p',
      location: 'l',
      modelInvocable: true,
    }))
    const text = catalog(skills, 1000)
    expect(text.length).toBeLessThan(1200)
    expect(text).toMatch(/\(\d+ more skills not listed for space/)
    expect(catalog([], 1000)).toBe('')
  })
})
