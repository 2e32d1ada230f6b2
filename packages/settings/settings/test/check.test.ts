// The start check of ctx.settings: unknown sections, invalid values and unknown keys, each one
// problem naming the key, the bad value, the valid ones and a "did you mean" for a near miss.
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import Schema from 'schemastery'
import { MemorySettings, didYouMean } from '../src/index.ts'

const Permissions = Schema.object({ default: Schema.union(['read-only', 'workspace-write', 'danger-full-access']) })
const Web = Schema.object({
  port: Schema.natural().default(3080),
  tls: Schema.object({ on: Schema.boolean().default(false) }).default({ on: false }),
})

async function boot(initial: Record<string, Record<string, unknown>>) {
  const ctx = new Context()
  await ctx.plugin(MemorySettings, { initial: initial as never })
  return ctx
}

describe('settings start check', () => {
  it('names a bad enum value, the valid ones and the near miss', async () => {
    const ctx = await boot({ permissions: { default: 'workspace-writ' } })
    ctx.settings.section('permissions', Permissions)
    const [problem, ...rest] = ctx.settings.check()
    expect(rest).toEqual([])
    expect(ctx.settings.formatProblem(problem)).toBe(
      'memory settings: permissions.default: "workspace-writ" is not valid (valid: "read-only", "workspace-write", "danger-full-access"; did you mean "workspace-write"?)',
    )
  })

  it('names the expected type of a non-enum value and the key of a nested field', async () => {
    const ctx = await boot({ web: { port: 'eighty' }, other: {} })
    ctx.settings.section('web', Web)
    ctx.settings.claim('other')
    expect(ctx.settings.check().map((p) => [p.path.join('.'), p.message])).toEqual([
      ['web.port', '"eighty" is not valid (expected number)'],
    ])
  })

  it('flags an unknown section with the closest known one, and accepts sections other packages declare', async () => {
    const ctx = await boot({ permisions: { default: 'read-only' }, mcpServers: {} })
    ctx.settings.section('permissions', Permissions)
    const problems = ctx.settings.check(['mcpServers'])
    expect(problems.map((p) => [p.path.join('.'), p.message])).toEqual([
      ['permisions', 'unknown section (did you mean "permissions"?); known sections: mcpServers, permissions'],
    ])
  })

  it('flags unknown keys of an object section, nested ones too', async () => {
    const ctx = await boot({ web: { prot: 1, tls: { of: true } } })
    ctx.settings.section('web', Web)
    expect(ctx.settings.check().map((p) => `${p.path.join('.')}: ${p.message}`)).toEqual([
      'web.prot: unknown key (did you mean "port"?); valid keys: port, tls',
      'web.tls.of: unknown key (did you mean "on"?); valid keys: on',
    ])
  })

  it('finds nothing wrong in a valid document', async () => {
    const ctx = await boot({ permissions: { default: 'read-only' }, web: { port: 1 } })
    ctx.settings.section('permissions', Permissions)
    ctx.settings.section('web', Web)
    expect(ctx.settings.check()).toEqual([])
    expect(ctx.settings.claimed()).toEqual(['permissions', 'web'])
  })

  it('suggests only near misses', () => {
    expect(didYouMean('yolo', ['read-only', 'workspace-write'])).toBeUndefined()
    expect(didYouMean('permisions', ['model', 'permissions'])).toBe('permissions')
    expect(didYouMean('Model', ['model'])).toBe('model')
  })
})
