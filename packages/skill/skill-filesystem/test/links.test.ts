// A skill is read by the harness and its body sent to the model. A cloned repository's skill whose
// SKILL.md is a link to a file outside the project is not read (in every mode); the user's own
// skills may be links anywhere, but not into what the sandbox hides.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { Context } from 'cordis'
import SkillRegistry from '@dsh/skill'
import HomePaths from '@dsh/home-paths'
import SandboxPolicyService from '@dsh/sandbox-policy'
import * as SkillFilesystem from '../src/index.ts'

let root: string | undefined
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true })
  root = undefined
})

const SECRET = 'PLANTED-SECRET-BODY-0042'

it('a project skill linked outside the project is not read; a user skill linked elsewhere is, unless it leads to the credentials', async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-skill-links-')))
  const home = join(root, 'home')
  const cwd = join(root, 'project')
  const elsewhere = join(root, 'elsewhere')
  for (const dir of [
    join(home, 'skills', 'mine'),
    join(home, 'skills', 'creds'),
    join(cwd, '.claude', 'skills', 'evil'),
    join(cwd, '.claude', 'skills', 'fine'),
    elsewhere,
  ])
    mkdirSync(dir, { recursive: true })
  writeFileSync(join(elsewhere, 'SKILL.md'), `---\nname: evil\ndescription: Looks harmless.\n---\n${SECRET}`)
  writeFileSync(
    join(elsewhere, 'user.md'),
    '---\nname: mine\ndescription: The user keeps it elsewhere.\n---\nuser body',
  )
  writeFileSync(join(home, '.credentials.yaml'), `---\nname: creds\ndescription: Credentials.\n---\n${SECRET}`)
  writeFileSync(join(cwd, 'shared.md'), '---\nname: fine\ndescription: Linked inside the project.\n---\nproject body')
  symlinkSync(join(elsewhere, 'SKILL.md'), join(cwd, '.claude', 'skills', 'evil', 'SKILL.md'))
  symlinkSync('../../../shared.md', join(cwd, '.claude', 'skills', 'fine', 'SKILL.md'))
  symlinkSync(join(elsewhere, 'user.md'), join(home, 'skills', 'mine', 'SKILL.md'))
  symlinkSync(join(home, '.credentials.yaml'), join(home, 'skills', 'creds', 'SKILL.md'))

  const ctx = new Context()
  await ctx.plugin(HomePaths, { home })
  await ctx.plugin(SandboxPolicyService, {})
  await ctx.plugin(SkillRegistry)
  await ctx.plugin(SkillFilesystem, {})
  expect(ctx.skills.list(cwd).map((s) => s.name)).toEqual(['fine', 'mine'])
  const problems = ctx.skills
    .problems(cwd)
    .map((p) => `${p.location}: ${p.message}`)
    .join('\n')
  expect(problems).toContain(
    `${join(cwd, '.claude', 'skills', 'evil', 'SKILL.md')}: not read: it resolves to ${join(elsewhere, 'SKILL.md')}, outside ${cwd}`,
  )
  expect(problems).toContain(
    `${join(home, 'skills', 'creds', 'SKILL.md')}: not read: it leads to ${join(home, '.credentials.yaml')}`,
  )
  expect(problems).not.toContain(SECRET)
  const fine = await ctx.skills.load('fine', cwd)
  expect(fine.body).toContain('project body')
  expect((await ctx.skills.load('mine', cwd)).body).toContain('user body')
})

it("a project root configured as an absolute path is the user's choice: its skills load", async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-skill-abs-')))
  const home = join(root, 'home')
  const cwd = join(root, 'project')
  const team = join(root, 'team-skills')
  for (const dir of [home, cwd, join(team, 'release')]) mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(team, 'release', 'SKILL.md'),
    '---\nname: release\ndescription: Team release steps.\n---\nteam body',
  )
  const ctx = new Context()
  await ctx.plugin(HomePaths, { home })
  await ctx.plugin(SandboxPolicyService, {})
  await ctx.plugin(SkillRegistry)
  await ctx.plugin(SkillFilesystem, { projectDirs: ['.claude/skills', team] })
  expect(ctx.skills.problems(cwd)).toEqual([])
  expect((await ctx.skills.load('release', cwd)).body).toContain('team body')
})
