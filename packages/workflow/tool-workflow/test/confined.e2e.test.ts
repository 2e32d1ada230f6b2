// Keyless end-to-end through the real `dsh` bin: a workflow script is code the model wrote, so in
// workspace-write it runs confined like run_code (through ctx.codeRuntime, a child process in the
// session's sandbox): it cannot write outside the workspace or find the API key, and its
// `agents.spawn` still starts a child on the host.
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
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

describe('workflow scripts are confined like bash (workspace-write, real bin)', () => {
  it('a script cannot write outside the workspace or read the key; agents.spawn still works', {
    timeout: 120_000,
  }, async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-workflow-confined-')))
    const home = join(root, 'home')
    const cwd = join(root, 'work')
    const outside = join(root, 'outside')
    for (const dir of [cwd, outside]) mkdirSync(dir, { recursive: true })
    const patch = join(root, 'workflow.patch.yml')
    writeFileSync(
      patch,
      [
        '- id: workflow-engine',
        '  disabled: false',
        '- id: tool-workflow',
        '  disabled: false',
        '- id: sandbox-policy',
        '  config:',
        '    tempDirs: []',
        '- id: permission-presets',
        '  config:',
        '    default: e2e',
        '    env: ""',
        '    presets:',
        '      e2e: { mode: workspace-write, approval: never, description: "confined" }',
        '',
      ].join('\n'),
    )
    const script = [
      'const fs = process.getBuiltinModule("fs")',
      `let write = "done"; try { fs.writeFileSync(${JSON.stringify(join(outside, 'x.txt'))}, "pwned") } catch (e) { write = e.code }`,
      'const texts = [JSON.stringify(process.env)]',
      'for (const entry of fs.readdirSync("/proc")) {',
      '  if (!/^\\d+$|^self$/.test(entry)) continue',
      '  try { texts.push(fs.readFileSync(`/proc/${entry}/environ`, "latin1")) } catch {}',
      '}',
      'const key = texts.some((t) => t.includes("sk-test-workflow-confined")) ? "found" : "absent"',
      'const child = await agents.spawn({ prompt: "Say hi.", description: "greeter" })',
      'return { write, key, child: child.status }',
    ].join('\n')
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_wf', name: 'workflow', arguments: { script, description: 'probe' } }] },
        { text: 'hi' },
        { text: 'done' },
      ] as never,
    })
    const env = {
      DSH_HOME: home,
      HOME: home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-workflow-confined',
    }
    const run = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'probe'], {
      cwd,
      env,
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const events = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === 'event')
      .map((l) => l.event as { type: string; data: Record<string, any> })
    const result = events.find((e) => e.type === 'tool/result' && e.data.message.callId === 'c_wf')!.data
    const text = result.message.content[0].text as string
    expect(result.error).toBeUndefined()
    expect(text).toContain('Return value:\n{\n  "write": "EROFS",\n  "key": "absent",\n  "child": "completed"\n}')
    expect(existsSync(join(outside, 'x.txt'))).toBe(false)
  })
})
