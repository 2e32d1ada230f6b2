import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import SystemPrompt from '@dsh/system-prompt'
import { withStandingScope } from '@dsh/scope'
import * as Persona from '../src/index.ts'

const input = { provider: 'p', model: 'm', cwd: '/w', date: '2026-01-02' }

async function boot() {
  const ctx = new Context()
  await ctx.plugin(SystemPrompt, {
    identity: 'IDENTITY',
    persona: 'DEPLOYMENT',
    sections: { 'dsh:working': false, 'dsh:environment': false, 'dsh:date': false },
  } as never)
  return ctx
}

describe('@dsh/persona', () => {
  it('in a profile it replaces the deployment persona, and unloads back to it', async () => {
    const ctx = await boot()
    const fiber = ctx.plugin(Persona, { text: 'You are terse.' })
    await fiber
    expect(ctx.systemPrompt.assemble(input).system).toBe('IDENTITY\n\nYou are terse.')
    await fiber.dispose()
    expect(ctx.systemPrompt.assemble(input).system).toBe('IDENTITY\n\nDEPLOYMENT')
  })

  it('under a standing scope it shadows the persona of that agent only; owns: true is the whole prompt', async () => {
    const ctx = await boot()
    await withStandingScope(ctx, 'agent:a').plugin(Persona, { text: 'You review code in {{cwd}}.', owns: true })
    await withStandingScope(ctx, 'agent:b').plugin(Persona, { text: 'B persona' })
    expect(ctx.systemPrompt.assemble({ ...input, scope: 'agent:a' }).system).toBe('You review code in /w.')
    expect(ctx.systemPrompt.assemble({ ...input, scope: 'agent:b' }).system).toBe('IDENTITY\n\nB persona')
    expect(ctx.systemPrompt.assemble(input).system).toBe('IDENTITY\n\nDEPLOYMENT')
  })

  it('reads the persona from a file, and names an unreadable one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'persona-'))
    writeFileSync(join(dir, 'p.md'), 'From a file.')
    expect(Persona.personaText({ text: '', file: 'p.md', owns: false }, dir)).toBe('From a file.')
    expect(() => Persona.personaText({ text: '', file: 'missing.md', owns: false }, dir)).toThrow(
      /^persona: cannot read file .*missing\.md \(ENOENT\)$/,
    )
  })

  it('rejects a bad config and an unknown variable at load', async () => {
    const ctx = await boot()
    expect(() => Persona.Config({ text: 5 } as never)).toThrow()
    await expect(ctx.plugin(Persona, { text: 'hi {{nope}}' })).rejects.toThrow(/unknown variable "\{\{nope\}\}"/)
    expect(ctx.systemPrompt.assemble(input).system).toBe('IDENTITY\n\nDEPLOYMENT')
  })
})
