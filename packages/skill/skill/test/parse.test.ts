import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SkillRegistry, { parseSkillFile, type SkillProvider } from '../src/index.ts'

describe('parseSkillFile', () => {
  it('reads name, description and the body after the front matter', () => {
    const parsed = parseSkillFile(
      '---\nname: pdf-forms\ndescription: >\n  Fill PDF forms.\n  Use for any .pdf form.\nlicense: MIT\n---\n\n# Steps\n1. read\n',
    )
    expect(parsed).toEqual({
      ok: true,
      skill: {
        name: 'pdf-forms',
        description: 'Fill PDF forms. Use for any .pdf form.',
        body: '# Steps\n1. read\n',
        modelInvocable: true,
        frontMatter: expect.objectContaining({ license: 'MIT' }),
      },
    })
    expect(parseSkillFile('---\nname: x\ndescription: d\ndisable-model-invocation: true\n---\nbody')).toMatchObject({
      ok: true,
      skill: { modelInvocable: false, body: 'body' },
    })
  })

  it('names what is wrong with a malformed file', () => {
    const problem = (text: string) => (parseSkillFile(text) as { problem: string }).problem
    expect(problem('# just markdown')).toMatch(/^no front matter/)
    expect(problem('---\nname: [unclosed\n---\n')).toMatch(/^the front matter is not valid YAML/)
    expect(problem('---\n- a\n---\n')).toMatch(/must be a YAML mapping/)
    expect(problem('---\ndescription: d\n---\n')).toMatch(/has no "name"/)
    expect(problem('---\nname: Bad Name\ndescription: d\n---\n')).toMatch(/the name "Bad Name" is not allowed/)
    expect(problem('---\nname: ok\n---\n')).toMatch(/has no "description"/)
    expect(problem(`---\nname: ok\ndescription: ${'x'.repeat(1100)}\n---\n`)).toMatch(/1100 characters/)
  })
})

describe('SkillRegistry', () => {
  const provider = (id: string, names: string[], priority?: number): SkillProvider => ({
    id,
    ...(priority !== undefined ? { priority } : {}),
    list: () => ({
      skills: names.map((name) => ({
        name,
        description: `${name} from ${id}`,
        provider: id,
        location: `${id}/${name}`,
        modelInvocable: true,
      })),
      problems: [{ location: `${id}/broken/SKILL.md`, message: 'no front matter' }],
    }),
    load: async (info) => ({ info, body: `body of ${info.name} from ${id}`, files: [] }),
  })

  it('merges providers by priority, loads through the owner, logs each problem once and unwinds', async () => {
    const ctx = new Context()
    await ctx.plugin(SkillRegistry)
    const fiber = ctx.plugin({
      name: 'providers',
      inject: ['skills'],
      apply(inner: Context) {
        inner.skills.register(provider('low', ['a', 'shared']))
        inner.skills.register(provider('high', ['shared', 'z'], 10))
      },
    })
    await fiber
    expect(ctx.skills.list('/w').map((s) => `${s.name}:${s.provider}`)).toEqual(['a:low', 'shared:high', 'z:high'])
    expect((await ctx.skills.load('shared', '/w')).body).toBe('body of shared from high')
    await expect(ctx.skills.load('missing', '/w')).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect(ctx.skills.problems('/w').map((p) => p.location)).toEqual(['high/broken/SKILL.md', 'low/broken/SKILL.md'])
    expect(() => ctx.skills.register(provider('low', []))).toThrow(/already registered/)
    await fiber.dispose()
    expect(ctx.skills.list('/w')).toEqual([])
  })
})
