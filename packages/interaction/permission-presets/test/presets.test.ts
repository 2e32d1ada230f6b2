import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import ApprovalService from '@dsh/user-approval'
import PermissionPresetService, { PermissionPresetError, PresetAnswerer, type PresetChange } from '../src/index.ts'
import * as AnswererEntry from '../src/answerer.ts'

const saved = process.env.DSH_PERMISSION_MODE
afterEach(() => {
  if (saved === undefined) delete process.env.DSH_PERMISSION_MODE
  else process.env.DSH_PERMISSION_MODE = saved
})

async function boot(config?: unknown) {
  const ctx = new Context()
  const errors: unknown[] = []
  ctx.on('internal/error' as never, ((e: unknown) => errors.push(e)) as never)
  const fiber = ctx.plugin(PermissionPresetService, config as never)
  const outcome = await Promise.race([
    Promise.resolve(fiber).then(
      () => 'loaded',
      (error: unknown) => String(error),
    ),
    new Promise<string>((resolve) => setTimeout(() => resolve('pending'), 200)),
  ])
  return { ctx, outcome, errors: errors.map(String).join(' ') }
}

describe('ctx.permissionPresets', () => {
  it('ships workspace-write (+ ask) as the default, read-only (+ ask) and danger-full-access (+ never)', async () => {
    delete process.env.DSH_PERMISSION_MODE
    const { ctx } = await boot()
    expect(ctx.permissionPresets.names()).toEqual(['danger-full-access', 'read-only', 'workspace-write'])
    expect(ctx.permissionPresets.get('read-only')).toMatchObject({ mode: 'read-only', approval: 'ask' })
    expect(ctx.permissionPresets.current()).toMatchObject({
      name: 'workspace-write',
      mode: 'workspace-write',
      approval: 'ask',
    })
    expect(ctx.permissionPresets.get('danger-full-access')).toMatchObject({
      mode: 'danger-full-access',
      approval: 'never',
    })
    expect(ctx.permissionPresets.modeFor('s1')).toBe('workspace-write')
    expect(ctx.permissionPresets.policyFor('s1')).toBe('ask')
    expect(ctx.permissionPresets.defaultSource).toBe('config')
  })

  it('setDefault puts a preset above the env variable for the process; overrides still win; undefined removes it', async () => {
    process.env.DSH_PERMISSION_MODE = 'read-only'
    const { ctx } = await boot()
    const presets = ctx.permissionPresets
    presets.setDefault('danger-full-access')
    expect(presets.modeFor()).toBe('danger-full-access')
    expect(presets.default.name).toBe('danger-full-access')
    expect(presets.defaultSource).toBe('process')
    presets.set('s1', 'workspace-write')
    expect(presets.modeFor('s1')).toBe('workspace-write')
    expect(presets.modeFor('s2')).toBe('danger-full-access')
    expect(() => presets.setDefault('yolo')).toThrow(
      /unknown permission preset "yolo" \(from permissionPresets.setDefault\); valid presets: danger-full-access, read-only, workspace-write/,
    )
    expect(presets.modeFor()).toBe('danger-full-access')
    presets.setDefault(undefined)
    expect(presets.modeFor()).toBe('read-only')
    expect(presets.defaultSource).toBe('DSH_PERMISSION_MODE')
    delete process.env.DSH_PERMISSION_MODE
  })

  it('DSH_PERMISSION_MODE overrides the configured default; env: "" ignores it', async () => {
    process.env.DSH_PERMISSION_MODE = 'danger-full-access'
    const { ctx } = await boot({ default: 'workspace-write' })
    expect(ctx.permissionPresets.current().name).toBe('danger-full-access')
    expect(ctx.permissionPresets.defaultSource).toBe('DSH_PERMISSION_MODE')
    const ignored = await boot({ env: '' })
    expect(ignored.ctx.permissionPresets.current().name).toBe('workspace-write')
    process.env.OTHER_MODE_VAR = 'danger-full-access'
    const renamed = await boot({ env: 'OTHER_MODE_VAR' })
    expect(renamed.ctx.permissionPresets.current().name).toBe('danger-full-access')
    delete process.env.OTHER_MODE_VAR
  })

  it('a bad preset name fails loud and names the valid ones', async () => {
    process.env.DSH_PERMISSION_MODE = 'yolo'
    const fromEnv = await boot()
    expect(fromEnv.ctx.get('permissionPresets')).toBeUndefined()
    expect(`${fromEnv.outcome} ${fromEnv.errors}`).toContain(
      'unknown permission preset "yolo" (from DSH_PERMISSION_MODE); valid presets: danger-full-access, read-only, workspace-write',
    )
    delete process.env.DSH_PERMISSION_MODE
    const fromConfig = await boot({ default: 'full' })
    expect(`${fromConfig.outcome} ${fromConfig.errors}`).toContain(
      'unknown permission preset "full" (from config field "default")',
    )
    const badMode = await boot({ presets: { strict: { mode: 'paranoid', approval: 'ask' } } })
    expect(badMode.ctx.get('permissionPresets')).toBeUndefined()
    const { ctx } = await boot()
    expect(() => ctx.permissionPresets.set('s1', 'nope')).toThrow(PermissionPresetError)
    expect(() => ctx.permissionPresets.set('s1', 'nope')).toThrow(
      /valid presets: danger-full-access, read-only, workspace-write/,
    )
  })

  it('configured presets join the table and may replace a built-in', async () => {
    delete process.env.DSH_PERMISSION_MODE
    const { ctx } = await boot({
      default: 'read-only',
      presets: {
        'read-only': { mode: 'read-only', approval: 'on-failure', description: 'look, do not touch' },
        'workspace-write': { mode: 'workspace-write', approval: 'reject' },
      },
    })
    expect(ctx.permissionPresets.names()).toEqual(['danger-full-access', 'read-only', 'workspace-write'])
    expect(ctx.permissionPresets.current()).toEqual({
      name: 'read-only',
      mode: 'read-only',
      approval: 'on-failure',
      description: 'look, do not touch',
    })
    expect(ctx.permissionPresets.get('workspace-write')).toMatchObject({
      approval: 'reject',
      description: 'sandbox workspace-write, approval reject',
    })
  })

  it('per-session overrides, change events, clear and session deletion', async () => {
    delete process.env.DSH_PERMISSION_MODE
    const { ctx } = await boot()
    const changes: PresetChange[] = []
    ctx.on('permission-presets/changed', (change) => void changes.push(change))
    expect(ctx.permissionPresets.set('s1', 'danger-full-access').name).toBe('danger-full-access')
    ctx.permissionPresets.set('s1', 'danger-full-access') // no change, no event
    expect(ctx.permissionPresets.modeFor('s1')).toBe('danger-full-access')
    expect(ctx.permissionPresets.modeFor('s2')).toBe('workspace-write')
    expect(changes.map((c) => `${c.sessionId}: ${c.previous.name} -> ${c.preset.name}`)).toEqual([
      's1: workspace-write -> danger-full-access',
    ])
    ctx.permissionPresets.clear('s1')
    expect(ctx.permissionPresets.modeFor('s1')).toBe('workspace-write')
    ctx.permissionPresets.set('s3', 'danger-full-access')
    ctx.emit('session/deleted' as never, { id: 's3' } as never)
    expect(ctx.permissionPresets.current('s3').name).toBe('workspace-write')
    expect(changes).toHaveLength(3) // set s1, clear s1, set s3; deletion is not a change event
  })
})

describe('the preset policy answerer', () => {
  it('decides each request by its session preset: never allows, ask rejects with a how-to', async () => {
    delete process.env.DSH_PERMISSION_MODE
    expect(PresetAnswerer.name).toBe(AnswererEntry.name)
    const ctx = new Context()
    await ctx.plugin(ApprovalService)
    await ctx.plugin(PermissionPresetService)
    await ctx.plugin(AnswererEntry)
    ctx.permissionPresets.set('free', 'danger-full-access')
    const action = { argv: ['curl', 'example.com'] }
    expect(await ctx.approval.request({ sessionId: 'free', kind: 'network', title: 'fetch', action })).toMatchObject({
      decision: 'allowed-once',
      answeredBy: 'permission-preset-policy',
    })
    const confined = await ctx.approval.request({ sessionId: 'boxed', kind: 'network', title: 'fetch', action })
    expect(confined.decision).toBe('rejected')
    expect(confined.reason).toMatch(
      /approval policy "ask" needs a human, but this run has no interactive approver\. Rerun with `--permission-mode danger-full-access`/,
    )
  })
})

describe('settings.yaml section `permissions`', () => {
  async function withSettings(initial: Record<string, unknown>, config?: unknown) {
    const { MemorySettings } = await import('@dsh/settings')
    const ctx = new Context()
    await ctx.plugin(MemorySettings, { initial: initial as never })
    await ctx.plugin(PermissionPresetService, config as never)
    await new Promise((r) => setTimeout(r, 0))
    return ctx
  }

  it('sets the default between the row config and the env variable, and follows live edits', async () => {
    delete process.env.DSH_PERMISSION_MODE
    const ctx = await withSettings({ permissions: { default: 'read-only' } })
    expect(ctx.permissionPresets.current()).toMatchObject({ name: 'read-only', mode: 'read-only' })
    expect(ctx.permissionPresets.defaultSource).toBe('settings')
    ctx.permissionPresets.set('s1', 'danger-full-access')
    await ctx.settings.update('permissions', { default: 'danger-full-access' })
    expect(ctx.permissionPresets.modeFor('s2')).toBe('danger-full-access')
    await ctx.settings.replace('permissions', undefined)
    expect(ctx.permissionPresets.current()).toMatchObject({ name: 'workspace-write' })
    expect(ctx.permissionPresets.defaultSource).toBe('config')
    expect(ctx.permissionPresets.modeFor('s1')).toBe('danger-full-access')
  })

  it('an unknown preset in settings is ignored: the configured default stays', async () => {
    delete process.env.DSH_PERMISSION_MODE
    const ctx = await withSettings({ permissions: { default: 'yolo' } }, { default: 'read-only' })
    expect(ctx.permissionPresets.current().name).toBe('read-only')
    expect(ctx.settings.section('permissions', (v: unknown) => v as never).value).toEqual({ default: 'yolo' })
  })

  it('the environment variable still wins over settings', async () => {
    process.env.DSH_PERMISSION_MODE = 'danger-full-access'
    const ctx = await withSettings({ permissions: { default: 'read-only' } })
    expect(ctx.permissionPresets.current().name).toBe('danger-full-access')
    expect(ctx.permissionPresets.defaultSource).toBe('DSH_PERMISSION_MODE')
  })
})
