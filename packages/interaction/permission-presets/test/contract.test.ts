// Edges of ctx.permissionPresets that mutation testing (`pnpm mutation permission-presets`) showed no
// other test pinned: which configured preset names are refused, a padded env value, set()'s
// refusals, no change event for a no-op, the settings section going away, and the built-in table.
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { MemorySettings } from '@dsh/settings'
import PermissionPresetService, {
  PermissionPresetError,
  PresetAnswerer,
  SANDBOX_MODES,
  type PresetChange,
} from '../src/index.ts'

const saved = process.env.DSH_PERMISSION_MODE
afterEach(() => {
  if (saved === undefined) delete process.env.DSH_PERMISSION_MODE
  else process.env.DSH_PERMISSION_MODE = saved
})

function construct(config: Record<string, unknown> = {}) {
  // The service class itself, so a refused config is a thrown error to assert on.
  return new PermissionPresetService(new Context(), {
    env: '',
    default: 'workspace-write',
    presets: {},
    ...config,
  } as never)
}

describe('configured preset names', () => {
  it('accepts lowercase names of letters, digits, dot, underscore and dash, up to 64 characters', () => {
    const presets = Object.fromEntries(
      ['ok.name_1-x', '9lives', 'a'.repeat(64)].map((name) => [name, { mode: 'read-only', approval: 'ask' }]),
    )
    expect(construct({ presets }).names()).toEqual(expect.arrayContaining(Object.keys(presets)))
  })

  it('refuses any other name with a PermissionPresetError naming it', () => {
    for (const name of ['Strict', '-x', '.x', 'a b', 'a'.repeat(65), 'x/../y', 'x!']) {
      let error: unknown
      try {
        construct({ presets: { [name]: { mode: 'read-only', approval: 'ask' } } })
      } catch (caught) {
        error = caught
      }
      expect(error, name).toBeInstanceOf(PermissionPresetError)
      expect((error as Error).name).toBe('PermissionPresetError')
      expect((error as Error).message).toBe(
        `permission-presets: invalid preset name ${JSON.stringify(name)} in presets (lowercase letters, digits, . _ -)`,
      )
    }
  })
})

describe('the default', () => {
  it('reads the env variable with surrounding spaces trimmed', () => {
    process.env.DSH_PERMISSION_MODE = '  read-only \n'
    const service = construct({ env: 'DSH_PERMISSION_MODE' })
    expect(service.current().name).toBe('read-only')
    expect(service.defaultSource).toBe('DSH_PERMISSION_MODE')
  })

  it('returns to the configured default when the settings service goes away', async () => {
    delete process.env.DSH_PERMISSION_MODE
    const ctx = new Context()
    const settings = ctx.plugin(MemorySettings, {
      initial: { permissions: { default: 'danger-full-access' } } as never,
    })
    await settings
    await ctx.plugin(PermissionPresetService, { default: 'read-only' } as never)
    await expect.poll(() => ctx.permissionPresets.defaultSource).toBe('settings')
    expect(ctx.permissionPresets.current().name).toBe('danger-full-access')
    await settings.dispose()
    expect(ctx.permissionPresets.current().name).toBe('read-only')
    expect(ctx.permissionPresets.defaultSource).toBe('config')
  })
})

describe('session overrides', () => {
  it('set() refuses a missing or non-string session id with one line, and a bad preset naming where it came from', () => {
    const service = construct()
    for (const id of ['', undefined, 7]) {
      expect(() => service.set(id as never, 'read-only'), String(id)).toThrow(
        /^permissionPresets\.set: sessionId must be a non-empty string$/,
      )
    }
    expect(() => service.set('s1', 'nope')).toThrow('unknown permission preset "nope" (from permissionPresets.set)')
  })

  it('emits a change only when the preset in force changes, with the session, the new and the previous preset', async () => {
    const ctx = new Context()
    await ctx.plugin(PermissionPresetService, { env: '' } as never)
    const changes: PresetChange[] = []
    ctx.on('permission-presets/changed', (change) => void changes.push(change))
    ctx.permissionPresets.set('s1', 'workspace-write') // already the default: no change
    ctx.permissionPresets.clear('s2') // nothing to clear: no change
    expect(changes).toEqual([])
    ctx.permissionPresets.set('s1', 'read-only') // positive control
    expect(changes).toEqual([
      {
        sessionId: 's1',
        preset: ctx.permissionPresets.get('read-only'),
        previous: ctx.permissionPresets.get('workspace-write'),
      },
    ])
  })
})

describe('the built-in table', () => {
  it('lists every preset, each with its mode, policy and a description for people', () => {
    const service = construct()
    const list = service.list()
    expect(list.map((p) => p.name)).toEqual(['danger-full-access', 'read-only', 'workspace-write'])
    expect(list.map((p) => p.mode)).toEqual(['danger-full-access', 'read-only', 'workspace-write'])
    for (const preset of list) expect(preset.description.length, preset.name).toBeGreaterThan(40)
    expect(list[0]!.description).toMatch(/No confinement/)
    expect(list[1]!.description).toMatch(/write nothing/)
    expect(list[2]!.description).toMatch(/only inside the workspace/)
    expect([...SANDBOX_MODES]).toEqual(['read-only', 'workspace-write', 'danger-full-access'])
    expect(PresetAnswerer.name).toBe('permission-presets-answerer')
  })
})
