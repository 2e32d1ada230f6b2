import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SkillRegistry from '@dsh/skill'
import HomePaths from '@dsh/home-paths'
import * as SkillFilesystem from '../src/index.ts'

function skill(root: string, dir: string, text: string, files: Record<string, string> = {}) {
  mkdirSync(join(root, dir), { recursive: true })
  writeFileSync(join(root, dir, 'SKILL.md'), text)
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(root, dir, name, '..'), { recursive: true })
    writeFileSync(join(root, dir, name), content)
  }
}

describe('@dsh/skill-filesystem', () => {
  it('finds skills in the project roots and $DSH_HOME/skills, project first, and skips malformed ones with a warning', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-skills-'))
    const home = join(root, 'home')
    const cwd = join(root, 'project')
    skill(
      join(home, 'skills'),
      'commit-style',
      '---\nname: commit-style\ndescription: User-level commit rules.\n---\nWrite short subjects.',
    )
    skill(join(home, 'skills'), 'deploy', '---\nname: deploy\ndescription: The user deploy steps.\n---\nuser body')
    skill(
      join(cwd, '.dsh/skills'),
      'deploy',
      '---\nname: deploy\ndescription: The project deploy steps.\n---\nRun scripts/deploy.sh.',
      { 'scripts/deploy.sh': 'echo hi', 'ref/notes.md': 'n' },
    )
    skill(
      join(cwd, '.claude/skills'),
      'review',
      '---\nname: review\ndescription: Review checklist from Claude Code.\n---\nCheck tests.',
    )
    skill(join(cwd, '.agents/skills'), 'broken', '---\nname: broken\n---\nno description')
    skill(join(cwd, '.agents/skills'), 'nofront', 'just text')

    const ctx = new Context()
    await ctx.plugin(HomePaths, { home })
    await ctx.plugin(SkillRegistry)
    await ctx.plugin(SkillFilesystem, {})
    const list = ctx.skills.list(cwd)
    expect(list.map((s) => [s.name, s.description])).toEqual([
      ['commit-style', 'User-level commit rules.'],
      ['deploy', 'The project deploy steps.'],
      ['review', 'Review checklist from Claude Code.'],
    ])
    const problems = ctx.skills.problems(cwd)
    expect(problems).toEqual([
      { location: join(cwd, '.agents/skills/broken/SKILL.md'), message: expect.stringMatching(/no "description"/) },
      { location: join(cwd, '.agents/skills/nofront/SKILL.md'), message: expect.stringMatching(/^no front matter/) },
    ])
    const loaded = await ctx.skills.load('deploy', cwd)
    expect(loaded.body).toBe('Run scripts/deploy.sh.')
    expect(loaded.files).toEqual(['ref/notes.md', 'scripts/deploy.sh'])
    expect(loaded.info.dir).toBe(join(cwd, '.dsh/skills/deploy'))

    // An edited file is read again; a fixed skill appears.
    skill(join(cwd, '.agents/skills'), 'broken', '---\nname: broken\ndescription: Now fine.\n---\nok')
    expect(ctx.skills.list(cwd).map((s) => s.name)).toContain('broken')
    // Another directory sees only the user's skills.
    expect(ctx.skills.list(root).map((s) => s.name)).toEqual(['commit-style', 'deploy'])
    expect((await ctx.skills.load('deploy', root)).body).toBe('user body')
  })
})
