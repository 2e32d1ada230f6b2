// Loud configuration errors through the real bin: a bad settings.yaml value or an unknown section
// stops the launch with one located line (before any model request), `dsh config check` says the
// same without starting anything, and profile patches and credentials files are checked too.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let mock: MockServer
beforeAll(async () => {
  mock = await startMockServer({ steps: [{ text: 'Done.' }] } as never)
})
afterAll(async () => mock?.close())

function home(settings?: string): { root: string; home: string; env: Record<string, string> } {
  const root = mkdtempSync(join(tmpdir(), 'dsh-config-e2e-'))
  const dir = join(root, 'home')
  mkdirSync(dir, { recursive: true })
  if (settings !== undefined) writeFileSync(join(dir, 'settings.yaml'), settings)
  return {
    root,
    home: dir,
    env: { DSH_HOME: dir, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
  }
}

describe('settings.yaml errors stop the launch', () => {
  it('an invalid value: file, line, key, value, the valid ones and the near miss; no request is made', async () => {
    const h = home('# mine\npermissions:\n  default: workspace-writ\n')
    const before = mock.requests.length
    const run = await runDsh(['-p', 'hi'], { cwd: h.root, env: h.env })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe(
      `dsh: ${join(h.home, 'settings.yaml')}:3: permissions.default: "workspace-writ" is not valid (valid: "danger-full-access", "read-only", "workspace-write"; did you mean "workspace-write"?)\n`,
    )
    expect(mock.requests.length).toBe(before)
  })

  it('an unknown section names the closest known one; a valid document runs', async () => {
    const h = home('permisions:\n  default: read-only\n')
    const run = await runDsh(['-p', 'hi'], { cwd: h.root, env: h.env })
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(
      /settings\.yaml:1: permisions: unknown section \(did you mean "permissions"\?\); known sections: .*mcpServers.*permissions/,
    )
    // A section only another profile's plugin reads (mcpServers: mcp-client declares it) is known.
    const good = home('permissions:\n  default: read-only\nmcpServers: {}\n')
    const ok = await runDsh(['-p', 'hi'], { cwd: good.root, env: good.env })
    expect(ok, ok.stderr).toMatchObject({ code: 0, stdout: 'Done.\n' })
  })
})

describe('dsh config check', () => {
  it('exit 0 and one ok line for a valid configuration, 1 and the lines for a bad one, --json', async () => {
    const good = home('model:\n  model: deepseek-v4-flash\n')
    const ok = await runDsh(['config', 'check'], { cwd: good.root, env: good.env })
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stdout).toMatch(/^dsh: configuration ok \(profiles: headless; home: /)

    const bad = home('model:\n  modle: x\n')
    const run = await runDsh(['config', 'check'], { cwd: bad.root, env: bad.env })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe(
      `dsh: ${join(bad.home, 'settings.yaml')}:2: model.modle: unknown key (did you mean "model"?); valid keys: provider, model, reasoningEffort, maxTokens\n`,
    )
    const json = await runDsh(['config', 'check', '--json'], { cwd: bad.root, env: bad.env })
    expect(json.code).toBe(1)
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      profiles: ['headless'],
      problems: [{ profile: 'headless', message: expect.stringContaining('model.modle') }],
    })
  })

  it('checks the home patch layer and the credentials file as a launch would', async () => {
    const h = home()
    writeFileSync(join(h.home, 'cordis.patch.yml'), '- id: permission-presets\n  config:\n    default: yolo\n')
    const patch = await runDsh(['config', 'check'], { cwd: h.root, env: h.env })
    expect(patch.code).toBe(1)
    expect(patch.stderr).toMatch(/^dsh: boot failed: row permission-presets \(@dsh\/permission-presets\): .*yolo/)

    const c = home()
    writeFileSync(join(c.home, '.credentials.yaml'), 'DEEPSEEK_API_KEY: sk-secret-value\n')
    chmodSync(join(c.home, '.credentials.yaml'), 0o644)
    const creds = await runDsh(['config', 'check'], { cwd: c.root, env: c.env })
    expect(creds.code).toBe(1)
    expect(creds.stderr).toContain(`chmod 600 ${join(c.home, '.credentials.yaml')}`)
    expect(creds.stderr).not.toContain('sk-secret-value')
  })

  it('a credentials file: a misspelt name or a value of several lines stops the launch with file, line and name', async () => {
    const h = home()
    const file = join(h.home, '.credentials.yaml')
    writeFileSync(file, 'OPENAI_API_KEY: sk-one-secret\nDEEPSEEK_APIKEY: sk-two-secret\n', { mode: 0o600 })
    const before = mock.requests.length
    const run = await runDsh(['-p', 'hi'], { cwd: h.root, env: h.env })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe(
      `dsh: boot failed: row credentials (@dsh/credentials-local): apply failed: ${file}:2: DEEPSEEK_APIKEY: unknown credential name (did you mean "DEEPSEEK_API_KEY"?); if it is another plugin's credential, add it to the credentials row's config.knownNames\n`,
    )
    expect(mock.requests.length).toBe(before)
    const check = await runDsh(['config', 'check'], { cwd: h.root, env: h.env })
    expect(check.code).toBe(1)
    expect(check.stderr).toContain(`${file}:2: DEEPSEEK_APIKEY: unknown credential name`)

    writeFileSync(file, 'DEEPSEEK_API_KEY: |\n  sk-two-secret\n', { mode: 0o600 })
    const multi = await runDsh(['-p', 'hi'], { cwd: h.root, env: h.env })
    expect(multi.code).toBe(1)
    expect(multi.stderr).toContain(`${file}:1: DEEPSEEK_API_KEY: the value holds a line break`)
    expect(multi.stderr + run.stderr + check.stderr).not.toContain('secret')
  })

  it('a profile patch: an unknown config key stops the launch, a near-miss row id is a warning with the likely id', async () => {
    const h = home()
    const patch = join(h.home, 'cordis.patch.yml')
    writeFileSync(patch, '- id: permisions\n  disabled: true\n- id: mcp\n  config:\n    servrs: {}\n')
    const run = await runDsh(['-p', 'hi'], { cwd: h.root, env: h.env })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(
      `dsh: warning: home (${patch}:1): [0] id "permisions" names no row (did you mean "permission-presets"?); skipped\n`,
    )
    expect(run.stderr).toMatch(
      new RegExp(
        `^dsh: ${patch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:5: row mcp \\(@dsh/mcp-client\\): config\\.servrs: unknown key \\(did you mean "servers"\\?\\); valid keys: servers, `,
        'm',
      ),
    )
    const check = await runDsh(['config', 'check'], { cwd: h.root, env: h.env })
    expect(check.code).toBe(1)
    expect(check.stderr).toContain(
      `${patch}:5: row mcp (@dsh/mcp-client): config.servrs: unknown key (did you mean "servers"?)`,
    )
  })

  it('a profile patch: a refused value, a value its plugin refuses and an unknown row field name file and line', async () => {
    const h = home()
    const patch = join(h.home, 'cordis.patch.yml')
    writeFileSync(patch, '# mine\n- id: mcp\n  config:\n    retry: {}\n    connectTimeoutMs: soon\n')
    const value = await runDsh(['-p', 'hi'], { cwd: h.root, env: h.env })
    expect(value.code).toBe(1)
    expect(value.stderr).toBe(
      `dsh: boot failed: row mcp (@dsh/mcp-client): ${patch}:5: invalid config: field config.connectTimeoutMs: expected number but got soon\n`,
    )
    writeFileSync(patch, '- id: permission-presets\n  config:\n    default: workspace-writ\n')
    const preset = await runDsh(['-p', 'hi'], { cwd: h.root, env: h.env })
    expect(preset.code).toBe(1)
    expect(preset.stderr).toBe(
      `dsh: boot failed: row permission-presets (@dsh/permission-presets): ${patch}:2: apply failed: unknown permission preset "workspace-writ" (from config field "default"); valid presets: danger-full-access, read-only, workspace-write; did you mean "workspace-write"?\n`,
    )
    writeFileSync(patch, '- id: mcp\n  disabled: false\n  confg:\n    servers: {}\n')
    const field = await runDsh(['config', 'check'], { cwd: h.root, env: h.env })
    expect(field.code).toBe(1)
    expect(field.stderr).toBe(
      `dsh: ${patch}:3: [0].confg: unknown field (did you mean "config"?); a row has "id", "name", "config", "disabled", "inject", "group", "isolate", "intercept"\n`,
    )
  })

  it('checks the web profile while its port is taken (the probe listens on a free port)', async () => {
    const { createServer } = await import('node:net')
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    const { port } = busy.address() as { port: number }
    try {
      const h = home()
      // The web profile's configured port is the one a running `dsh web` (here: `busy`) holds.
      writeFileSync(
        join(h.home, 'cordis.patch.yml'),
        `- id: web-startup\n  config:\n    port: ${port}\n    open: false\n`,
      )
      const run = await runDsh(['config', 'check', '--profile', 'web'], { cwd: h.root, env: h.env })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toMatch(/^dsh: configuration ok \(profiles: web;/)
    } finally {
      await new Promise((resolve) => busy.close(resolve))
    }
  })

  it('usage errors exit 2; --help exits 0', async () => {
    const h = home()
    const typo = await runDsh(['config', 'chek'], { cwd: h.root, env: h.env })
    expect(typo).toMatchObject({
      code: 2,
      stderr:
        'dsh: config: unknown subcommand "chek" (did you mean "check"?); valid: check\ndsh: see "dsh config --help"\n',
    })
    expect((await runDsh(['config', 'check', '--bogus'], { cwd: h.root, env: h.env })).code).toBe(2)
    expect((await runDsh(['config'], { cwd: h.root, env: h.env })).code).toBe(2)
    const help = await runDsh(['config', '--help'], { cwd: h.root, env: h.env })
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: dsh config check')
  })
})
