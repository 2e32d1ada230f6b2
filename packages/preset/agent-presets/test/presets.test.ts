import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness, type HarnessOptions } from '@dsh/agent-loop-testkit'
import AgentPresets, { loadPresetFile, presetOf } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  delete process.env.DSH_TEST_PRESET
})

/** A profile's tools with their guidance sections. */
const Profile = {
  name: 'profile-tools',
  inject: ['tools', 'systemPrompt'],
  apply(ctx: Context) {
    for (const name of ['bash', 'read', 'write']) {
      ctx.tools.register({
        name,
        description: name,
        parameters: { type: 'object' },
        execute: () => ({ content: `${name} ran` }),
      })
      ctx.systemPrompt.registerSection({ id: `tool:${name}`, order: 300, text: `GUIDE ${name}` })
    }
  },
}

function home(presets: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'presets-home-'))
  for (const [name, text] of Object.entries(presets)) {
    mkdirSync(join(dir, 'presets', name), { recursive: true })
    writeFileSync(join(dir, 'presets', name, 'agent.cordis.yml'), text)
  }
  return dir
}

const READ_ONLY = `
- id: tool-set
  name: "@dsh/agent-presets/tool-set"
  config:
    only: [read]
    sections: ["tool:read"]
`
const OWN_PROMPT = `
- id: persona
  name: "@dsh/persona"
  config:
    text: "You are Quill, a reviewer. Working directory: {{cwd}}."
    owns: true
`

async function boot(
  config: object,
  script: NonNullable<HarnessOptions['script']> = [{ text: 'ok' }],
  session?: Harness['session'],
) {
  harness = await createHarness({ script, session, cwd: '/w', plugins: [[Profile], [AgentPresets, config]] })
  return harness
}

const toolNames = (request: { tools?: { name: string }[] }) => (request.tools ?? []).map((t) => t.name)

describe('@dsh/agent-presets', () => {
  it('lists the built-in presets and the home ones (a home preset shadows a built-in)', async () => {
    const dir = home({ reviewer: OWN_PROMPT, minimal: READ_ONLY, 'Bad Name': '[]' })
    const h = await boot({ home: dir })
    expect(h.ctx.agentPresets.list().map((p) => [p.name, p.source])).toEqual([
      ['code', 'builtin'],
      ['minimal', 'home'],
      ['reviewer', 'home'],
      ['standard', 'builtin'],
    ])
    expect(h.ctx.agentPresets.default).toBe('standard')
  })

  it('composes a session from its preset: a custom tool set limits the offered tools and their guidance', async () => {
    const h = await boot({ home: home({ readonly: READ_ONLY }), default: 'readonly' }, [
      {
        toolCalls: [
          { name: 'write', arguments: {} },
          { name: 'read', arguments: {} },
        ],
      },
      { text: 'done' },
    ])
    await h.prompt('go')
    const [request] = h.model.requests
    expect(toolNames(request)).toEqual(['read'])
    expect(request.system).toContain('GUIDE read')
    expect(request.system).not.toContain('GUIDE bash')
    expect(presetOf(h.session)).toBe('readonly')
    const results = h.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => e.data as { error?: { code: string } })
    expect(results.map((r) => r.error?.code)).toEqual(['UNKNOWN_TOOL', undefined])
    // Other agents (global scope) still see every tool.
    expect(h.ctx.tools.schemas().map((t) => t.name)).toEqual(['bash', 'read', 'write'])
  })

  it('the standard preset changes nothing; a persona row can own the whole prompt', async () => {
    const h = await boot({ home: home({ reviewer: OWN_PROMPT }) })
    await h.prompt('hi')
    expect(presetOf(h.session)).toBe('standard')
    expect(toolNames(h.model.requests[0])).toEqual(['bash', 'read', 'write'])
    await h.dispose()
    const r = await boot({ home: home({ reviewer: OWN_PROMPT }), default: 'reviewer' })
    await r.prompt('hi')
    expect(r.model.requests[0].system).toBe('You are Quill, a reviewer. Working directory: /w.')
  })

  it('a resumed session is composed from its recorded preset, whatever the default', async () => {
    const dir = home({ readonly: READ_ONLY })
    const h = await boot({ home: dir, default: 'readonly' })
    await h.prompt('one')
    const session = h.session
    await h.dispose()
    harness = undefined
    const again = await boot({ home: dir }, [{ text: 'two' }], session)
    await again.prompt('two')
    expect(toolNames(again.model.requests[0])).toEqual(['read'])
    expect(session.events.filter((e) => e.type === 'preset/selected')).toHaveLength(1)
  })

  it("/preset names the session's preset and the roster", async () => {
    const CommandRegistry = (await import('@dsh/commands')).default
    harness = await createHarness({
      cwd: '/w',
      plugins: [
        [Profile],
        [CommandRegistry, {}],
        [AgentPresets, { home: home({ readonly: READ_ONLY }), default: 'readonly' }],
      ],
    })
    const done = await harness.ctx.commands.dispatch(harness.agent, '/preset')
    expect(done).toMatchObject({
      ok: true,
      output: expect.stringContaining(
        'composed from the preset "readonly". Presets: code (builtin), minimal (builtin), readonly (home), standard (builtin).',
      ),
    })
  })

  it('select() chooses the preset of a new session and recomposes it; a recorded preset stays', async () => {
    const h = await boot({ home: home({ readonly: READ_ONLY }) }, [{ text: 'one' }])
    expect(() => h.ctx.agentPresets.select(h.session, 'nope')).toThrow('unknown agent preset "nope"')
    h.ctx.agentPresets.select(h.session, 'readonly')
    await h.prompt('go')
    expect(toolNames(h.model.requests[0])).toEqual(['read'])
    expect(
      h.session.events.filter((e) => e.type === 'preset/selected').map((e) => (e.data as { name: string }).name),
    ).toEqual(['readonly'])
    expect(() => h.ctx.agentPresets.select(h.session, 'standard')).toThrow(
      `session ${h.session.id} is composed from preset "readonly"; a session keeps its preset`,
    )
    h.ctx.agentPresets.select(h.session, 'readonly') // the same preset again: nothing to do
  })

  it('disposing the agent unloads its rows', async () => {
    const h = await boot({ home: home({ readonly: READ_ONLY }), default: 'readonly' })
    await h.prompt('go')
    expect(h.ctx.tools.list(h.agent.scope).map((t) => t.name)).toEqual(['read'])
    await h.agent.dispose()
    await vi.waitFor(
      () => expect(h.ctx.tools.list(h.agent.scope).map((t) => t.name)).toEqual(['bash', 'read', 'write']),
      { timeout: 10_000, interval: 5 },
    )
  })

  it('an unknown default preset fails the row at load, naming what exists; the env variable overrides', async () => {
    const dir = home({})
    await expect(createHarness({ plugins: [[AgentPresets, { home: dir, default: 'nope' }]] })).rejects.toThrow(
      'unknown agent preset "nope" (from config.default); available: code, minimal, standard',
    )
    process.env.DSH_TEST_PRESET = 'code'
    const h = await boot({ home: dir, env: 'DSH_TEST_PRESET' })
    expect(h.ctx.agentPresets.default).toBe('code')
    expect(() => h.ctx.agentPresets.setDefault('zzz')).toThrow(
      'unknown agent preset "zzz"; available: code, minimal, standard',
    )
  })

  it('a bad row is one line naming file, row and field, and ends the turn as a plugin error', async () => {
    const dir = home({
      typo: '- id: persona\n  nam: "@dsh/persona"\n',
      badconfig: '- id: persona\n  name: "@dsh/persona"\n  config:\n    owns: sometimes\n',
      missing: '- id: x\n  name: "@dsh/no-such-plugin"\n',
      notalist: 'id: x\n',
      dup: '- id: a\n  name: "@dsh/persona"\n- id: a\n  name: "@dsh/persona"\n',
    })
    const file = (name: string) => join(dir, 'presets', name, 'agent.cordis.yml')
    await expect(loadPresetFile(file('typo'))).rejects.toThrow(
      `${file('typo')}: row 1 (persona): nam: unknown field (rows have id, name, config, disabled)`,
    )
    await expect(loadPresetFile(file('badconfig'))).rejects.toThrow(
      new RegExp(`^${file('badconfig')}: row 1 \\(persona\\): config: .*owns`),
    )
    await expect(loadPresetFile(file('missing'))).rejects.toThrow(
      `${file('missing')}: row 1 (x): name: cannot resolve "@dsh/no-such-plugin" from the preset directory or the dsh installation`,
    )
    await expect(loadPresetFile(file('notalist'))).rejects.toThrow(`${file('notalist')}: expected a list of rows`)
    await expect(loadPresetFile(file('dup'))).rejects.toThrow(`${file('dup')}: row 2 (a): id: duplicate id "a"`)
    for (const message of [(await loadPresetFile(file('missing')).catch((e: Error) => e.message)) as string])
      expect(message).not.toContain('\n')

    const h = await boot({ home: dir, default: 'badconfig' })
    const result = await h.prompt('go')
    expect(result.reason).toBe('error')
    expect(result.error?.code).toBe('PLUGIN_ERROR')
    expect(result.error?.message).toContain(`${file('badconfig')}: row 1 (persona): config:`)
    expect(h.model.requests).toHaveLength(0)
  })
})

describe('the parse cache of preset files', () => {
  it('keeps a parsed document per text: a second load reads the cache, a changed text parses again', async () => {
    const dir = home({ cached: '- id: persona\n  name: "@dsh/persona"\n' })
    const file = join(dir, 'presets', 'cached', 'agent.cordis.yml')
    const cacheDir = join(dir, '.cache', 'presets')
    expect((await loadPresetFile(file, [], cacheDir)).map((r) => r.id)).toEqual(['persona'])
    const { readdirSync, readFileSync } = await import('node:fs')
    const [entry] = readdirSync(cacheDir)
    expect(JSON.parse(readFileSync(join(cacheDir, entry), 'utf8'))).toEqual({
      doc: [{ id: 'persona', name: '@dsh/persona' }],
    })
    // The cached document is what the next load uses (a planted row id proves it), and it is
    // still checked like a parsed one.
    writeFileSync(join(cacheDir, entry), JSON.stringify({ doc: [{ id: 'from-cache', name: '@dsh/persona' }] }))
    expect((await loadPresetFile(file, [], cacheDir)).map((r) => r.id)).toEqual(['from-cache'])
    writeFileSync(join(cacheDir, entry), JSON.stringify({ doc: [{ id: 'from-cache', nam: 'x' }] }))
    await expect(loadPresetFile(file, [], cacheDir)).rejects.toThrow(/nam: unknown field/)
    // Another text is another entry; a corrupt entry is parsed again.
    writeFileSync(file, '- id: other\n  name: "@dsh/persona"\n')
    expect((await loadPresetFile(file, [], cacheDir)).map((r) => r.id)).toEqual(['other'])
    expect(readdirSync(cacheDir)).toHaveLength(2)
    writeFileSync(join(cacheDir, entry), '{}')
    writeFileSync(file, '- id: persona\n  name: "@dsh/persona"\n')
    expect((await loadPresetFile(file, [], cacheDir)).map((r) => r.id)).toEqual(['persona'])
    writeFileSync(join(cacheDir, entry), '{not json')
    writeFileSync(file, '- id: persona\n  name: "@dsh/persona"\n')
    expect((await loadPresetFile(file, [], cacheDir)).map((r) => r.id)).toEqual(['persona'])
  })

  it('does not store a document JSON would change (.inf) and works with an unwritable cache', async () => {
    const dir = home({ inf: '- id: persona\n  name: "@dsh/persona"\n  config:\n    x: .inf\n' })
    const file = join(dir, 'presets', 'inf', 'agent.cordis.yml')
    const cacheDir = join(dir, '.cache', 'presets')
    const rows = await loadPresetFile(file, [], cacheDir)
    expect((rows[0] as { config?: { x?: number } }).config?.x).toBe(Infinity)
    const { existsSync } = await import('node:fs')
    expect(existsSync(cacheDir) ? (await import('node:fs')).readdirSync(cacheDir) : []).toEqual([])
    writeFileSync(join(dir, 'blocker'), '')
    const ok = home({ p: '- id: persona\n  name: "@dsh/persona"\n' })
    expect(
      (await loadPresetFile(join(ok, 'presets', 'p', 'agent.cordis.yml'), [], join(dir, 'blocker', 'presets'))).map(
        (r) => r.id,
      ),
    ).toEqual(['persona'])
  })
})
