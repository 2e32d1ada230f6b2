// End-to-end: the real `dsh --profile headless` bin with `--preset`, presets in $DSH_HOME/presets,
// against @dsh/llm-mock-server.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

type Body = { tools?: { function: { name: string } }[]; messages: { role: string; content: unknown }[] }
const toolsOf = (body: unknown) => ((body as Body).tools ?? []).map((t) => t.function.name)
const systemOf = (body: unknown) => (body as Body).messages.find((m) => m.role === 'system')?.content

function setup(presets: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-presets-'))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  for (const [name, text] of Object.entries(presets)) {
    mkdirSync(join(home, 'presets', name), { recursive: true })
    writeFileSync(join(home, 'presets', name, 'agent.cordis.yml'), text)
  }
  return { home, cwd }
}

const PRESETS = {
  lookonly: '- id: tool-set\n  name: "@dsh/agent-presets/tool-set"\n  config:\n    only: [read, grep]\n',
  quill:
    '- id: persona\n  name: "@dsh/persona"\n  config:\n    text: "You are Quill. Answer in one word."\n    owns: true\n',
  broken: '- id: persona\n  name: "@dsh/persona"\n  config:\n    owns: sometimes\n',
}

describe('agent presets in dsh --profile headless', () => {
  it('a custom preset limits the offered tools, is recorded, and a resumed session keeps it', {
    timeout: 90_000,
  }, async () => {
    const { home, cwd } = setup(PRESETS)
    server = await startMockServer({ steps: [{ text: 'one' }, { text: 'two' }, { text: 'three' }] as never })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' }
    const first = await runDsh(['--profile', 'headless', '--output-format', 'json', '--preset', 'lookonly', 'look'], {
      cwd,
      env,
    })
    expect(first.stderr).toBe('')
    const { sessionId } = JSON.parse(first.stdout)
    expect(toolsOf(server.requests[0].body)).toEqual(['grep', 'read'])
    const resumed = await runDsh(['--profile', 'headless', '--output-format', 'json', '--resume', sessionId, 'again'], {
      cwd,
      env,
    })
    expect(resumed.stderr).toBe('')
    expect(toolsOf(server.requests[1].body)).toEqual(['grep', 'read'])
    // The default preset offers the whole tool set.
    const plain = await runDsh(['--profile', 'headless', 'plain'], { cwd, env })
    expect(plain.code).toBe(0)
    expect(toolsOf(server.requests[2].body)).toEqual(expect.arrayContaining(['bash', 'edit', 'grep', 'read', 'write']))
    // Changing the preset of a recorded session is refused.
    const change = await runDsh(['--profile', 'headless', '--resume', sessionId, '--preset', 'standard', 'x'], {
      cwd,
      env,
    })
    expect(change.code).toBe(2)
    expect(change.stderr).toBe(
      `dsh: session ${sessionId} is composed from preset 'lookonly'; --preset cannot change it (leave --preset out)\n`,
    )
  })

  it('a persona row replaces the prompt; minimal offers bash and str_replace_editor only', {
    timeout: 90_000,
  }, async () => {
    const { home, cwd } = setup(PRESETS)
    server = await startMockServer({ steps: [{ text: 'Yes' }, { text: 'ok' }] as never })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' }
    const quill = await runDsh(['--profile', 'headless', '--preset', 'quill', 'ready?'], { cwd, env })
    expect(quill.stderr).toBe('')
    expect(quill.stdout).toBe('Yes\n')
    expect(systemOf(server.requests[0].body)).toBe('You are Quill. Answer in one word.')
    const minimal = await runDsh(['--profile', 'headless', '--preset', 'minimal', 'hi'], { cwd, env })
    expect(minimal.stderr).toBe('')
    expect(toolsOf(server.requests[1].body)).toEqual(['bash', 'str_replace_editor'])
    const system = String(systemOf(server.requests[1].body))
    expect(system).toContain('str_replace_editor')
    expect(system).not.toMatch(/\btodo_write\b/)
  })

  it('the code preset offers Code Mode (run_code) instead of the tool schemas', { timeout: 60_000 }, async () => {
    const { home, cwd } = setup(PRESETS)
    server = await startMockServer({ steps: [{ text: 'ok' }] as never })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' }
    const code = await runDsh(['--profile', 'headless', '--preset', 'code', 'hi'], { cwd, env })
    expect(code.stderr).toBe('')
    expect(toolsOf(server.requests[0].body)).toEqual(['run_code'])
  })

  it('an unknown preset and a bad row are one line each, exit 2, no request', { timeout: 60_000 }, async () => {
    const { home, cwd } = setup(PRESETS)
    server = await startMockServer({ steps: [] as never })
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' }
    const unknown = await runDsh(['--profile', 'headless', '--preset', 'nope', 'hi'], { cwd, env })
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toBe(
      'dsh: unknown agent preset "nope"; available: broken, code, lookonly, minimal, quill, standard\n',
    )
    const broken = await runDsh(['--profile', 'headless', '--preset', 'broken', 'hi'], { cwd, env })
    expect(broken.code).toBe(2)
    expect(broken.stderr).toMatch(
      new RegExp(
        `^dsh: ${join(home, 'presets', 'broken', 'agent.cordis.yml')}: row 1 \\(persona\\): config: [^\\n]*\\n$`,
      ),
    )
    expect(server.requests).toHaveLength(0)
  })
})
