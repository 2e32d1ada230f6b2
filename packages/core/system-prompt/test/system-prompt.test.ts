import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import SystemPrompt, { DEFAULT_IDENTITY, SystemPromptError } from '@dsh/system-prompt'

const input = { provider: 'deepseek-official', model: 'deepseek-chat', cwd: '/home/u/project', date: '2026-01-02' }

/** The built-in sections are dropped here so these tests see only what they register. */
const WITHOUT_BUILTINS = { 'dsh:working': false, 'dsh:environment': false, 'dsh:date': false }

async function boot(config?: Record<string, unknown>) {
  const ctx = new Context()
  await ctx.plugin(SystemPrompt, { sections: WITHOUT_BUILTINS, ...config } as never)
  return ctx
}

describe('system prompt', () => {
  it('without the built-in sections, the prompt is the harness identity alone', async () => {
    const ctx = await boot()
    expect(ctx.systemPrompt.assemble(input)).toEqual({ system: DEFAULT_IDENTITY, tools: [] })
  })

  it('orders identity, stable sections, persona, then volatile sections', async () => {
    const ctx = await boot({ identity: 'IDENTITY', persona: 'PERSONA' })
    const sp = ctx.systemPrompt
    sp.registerSection({ id: 'volatile-b', order: 1, text: 'VOLATILE 1', stable: false })
    sp.registerSection({ id: 'stable-z', order: 20, text: 'STABLE 20' })
    sp.registerSection({ id: 'stable-b', order: 10, text: 'STABLE 10b' })
    sp.registerSection({ id: 'stable-a', order: 10, text: '\n\nSTABLE 10a\n\n' })
    sp.registerSection({ id: 'volatile-a', order: 0, text: 'VOLATILE 0', stable: false })
    sp.registerSection({ id: 'empty', order: 5, text: '   ' })
    const { system } = sp.assemble(input)
    expect(system).toBe(
      ['IDENTITY', 'STABLE 10a', 'STABLE 10b', 'STABLE 20', 'PERSONA', 'VOLATILE 0', 'VOLATILE 1'].join('\n\n'),
    )
    expect(sp.sections().map((s) => s.id)).toEqual([
      'empty',
      'stable-a',
      'stable-b',
      'stable-z',
      'volatile-a',
      'volatile-b',
    ])
  })

  it('is deterministic regardless of registration order, and sorts tools by name', async () => {
    const build = async (reverse: boolean) => {
      const ctx = await boot()
      const sections = [
        { id: 'a', order: 1, text: 'A {{model}}' },
        { id: 'b', order: 1, text: 'B' },
        { id: 'c', order: 0, text: 'C', stable: false },
      ]
      for (const s of reverse ? sections.reverse() : sections) ctx.systemPrompt.registerSection(s)
      const tools = [
        { name: 'write', description: 'w', parameters: { type: 'object' } },
        { name: 'read', description: 'r', parameters: { type: 'object' } },
      ]
      return ctx.systemPrompt.assemble({ ...input, tools: reverse ? tools.reverse() : tools })
    }
    const one = await build(false)
    const two = await build(true)
    expect(JSON.stringify(one)).toBe(JSON.stringify(two))
    expect(one.tools.map((t) => t.name)).toEqual(['read', 'write'])
  })

  it('substitutes built-in, configured and registered variables', async () => {
    const ctx = await boot({ identity: 'I am on {{ os }}.', variables: { product: 'dsh' } })
    const sp = ctx.systemPrompt
    sp.registerVariable('where', (vars) => `bash in ${vars.cwd}`)
    sp.registerSection({
      id: 'env',
      order: 0,
      text: 'model={{model}} provider={{provider}} cwd={{cwd}} date={{date}} {{product}} {{where}}',
    })
    const { system } = sp.assemble(input)
    expect(system).toMatch(/^I am on \S+ \S+ \(\S+\)\.\n\n/)
    expect(system.split('\n\n')[1]).toBe(
      'model=deepseek-chat provider=deepseek-official cwd=/home/u/project date=2026-01-02 dsh bash in /home/u/project',
    )
    const today = sp.assemble({ ...input, date: undefined })
    expect(today.system).toMatch(/date=\d{4}-\d{2}-\d{2} /)
    expect(sp.variables()).toEqual(['cwd', 'date', 'git', 'model', 'os', 'product', 'provider', 'shell', 'where'])
  })

  it('rejects an unknown variable at registration, naming the section and the variable', async () => {
    const ctx = await boot()
    expect(() => ctx.systemPrompt.registerSection({ id: 'git', order: 1, text: 'Branch: {{branch}}' })).toThrow(
      SystemPromptError,
    )
    expect(() => ctx.systemPrompt.registerSection({ id: 'git', order: 1, text: 'Branch: {{branch}}' })).toThrow(
      /prompt section "git" uses unknown variable "\{\{branch\}\}"/,
    )
    expect(ctx.systemPrompt.sections()).toEqual([])
    expect(() => ctx.systemPrompt.setPersona('Hi {{nobody}}')).toThrow(/persona uses unknown variable "\{\{nobody\}\}"/)
    // Config is checked when the plugin loads.
    await expect(new Context().plugin(SystemPrompt, { identity: 'I am {{who}}' } as never)).rejects.toThrow(
      /config.identity uses unknown variable/,
    )
    await expect(new Context().plugin(SystemPrompt, { variables: { cwd: 'x' } } as never)).rejects.toThrow(/built-in/)
  })

  it('rejects duplicates and malformed sections', async () => {
    const ctx = await boot()
    const sp = ctx.systemPrompt
    sp.registerSection({ id: 'x', order: 1, text: 'X' })
    expect(() => sp.registerSection({ id: 'x', order: 2, text: 'X2' })).toThrow(/already registered/)
    expect(() => sp.registerSection({ id: '', order: 1, text: '' })).toThrow(/id/)
    expect(() => sp.registerSection({ id: 'y', order: Number.NaN, text: '' })).toThrow(/order/)
    expect(() => sp.registerVariable('model', () => 'm')).toThrow(/already defined/)
    expect(() => sp.registerVariable('bad name', () => 'm')).toThrow(/invalid variable name/)
  })

  it('scoped sections and personas shadow global ones for that scope only', async () => {
    const ctx = await boot({ identity: 'ID', persona: 'GLOBAL PERSONA' })
    const sp = ctx.systemPrompt
    sp.registerSection({ id: 'rules', order: 1, text: 'GLOBAL RULES' })
    sp.registerSection({ id: 'rules', order: 1, text: 'CHILD RULES', scope: 'agent:child' })
    sp.registerSection({ id: 'report', order: 2, text: 'REPORT BACK', scope: 'agent:child' })
    sp.setPersona('CHILD PERSONA', 'agent:child')
    expect(() => sp.setPersona('AGAIN', 'agent:child')).toThrow(/already registered/)
    expect(sp.assemble(input).system).toBe('ID\n\nGLOBAL RULES\n\nGLOBAL PERSONA')
    expect(sp.assemble({ ...input, scope: 'agent:child' }).system).toBe(
      'ID\n\nCHILD RULES\n\nREPORT BACK\n\nCHILD PERSONA',
    )
    expect(sp.assemble({ ...input, scope: 'agent:other' }).system).toBe('ID\n\nGLOBAL RULES\n\nGLOBAL PERSONA')
    const dispose = sp.setPersona('DEPLOYMENT PERSONA')
    expect(sp.assemble(input).system).toBe('ID\n\nGLOBAL RULES\n\nDEPLOYMENT PERSONA')
    dispose()
    expect(sp.persona()).toBe('GLOBAL PERSONA')
  })

  it('unloading the registering plugin removes its sections, variables and persona', async () => {
    const ctx = await boot({ identity: 'ID' })
    ctx.systemPrompt.registerSection({ id: 'base', order: 0, text: 'BASE' })
    const fiber = ctx.plugin({
      name: 'contrib',
      inject: ['systemPrompt'],
      apply(c: Context) {
        c.systemPrompt.registerVariable('branch', () => 'main')
        c.systemPrompt.registerSection({ id: 'git', order: 1, text: 'On branch {{branch}}', stable: false })
        c.systemPrompt.registerSection({ id: 'base', order: 0, text: 'CHILD BASE', scope: 'agent:c' })
        c.systemPrompt.setPersona('PLUGIN PERSONA')
      },
    })
    await fiber
    expect(ctx.systemPrompt.assemble(input).system).toBe('ID\n\nBASE\n\nPLUGIN PERSONA\n\nOn branch main')
    expect(ctx.systemPrompt.assemble({ ...input, scope: 'agent:c' }).system).toContain('CHILD BASE')
    await fiber.dispose()
    expect(ctx.systemPrompt.assemble(input).system).toBe('ID\n\nBASE')
    expect(ctx.systemPrompt.assemble({ ...input, scope: 'agent:c' }).system).toBe('ID\n\nBASE')
    expect(ctx.systemPrompt.variables()).not.toContain('branch')
  })

  it('the disposer removes a section; a section outliving its variable fails loudly at assembly', async () => {
    const ctx = await boot({ identity: 'ID' })
    const sp = ctx.systemPrompt
    const off = sp.registerSection({ id: 'tmp', order: 0, text: 'TMP' })
    off()
    off()
    expect(sp.assemble(input).system).toBe('ID')
    const dropVar = sp.registerVariable('v', () => 'value')
    sp.registerSection({ id: 'uses-v', order: 0, text: 'v={{v}}' })
    expect(sp.assemble(input).system).toBe('ID\n\nv=value')
    dropVar()
    expect(() => sp.assemble(input)).toThrow(
      /prompt section "uses-v" uses variable "\{\{v\}\}", which is no longer defined/,
    )
  })
})
