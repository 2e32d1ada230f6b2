// Keyless end-to-end through the real `dsh` bin and the scripted model server, in workspace-write
// with the built-in `code` agent preset: one run_code program tries every door the in-process
// worker left open (a write outside the workspace, the API key in its environment or any
// /proc/*/environ, a spawned process writing outside, a socket to a loopback server of the host)
// and calls a tool through the SDK. With no sandbox runner a program is refused and nothing runs.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let server: MockServer | undefined
let loopback: Server | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
  loopback?.close()
  loopback = undefined
})

const KEY = 'sk-test-code-runtime-not-a-real-key'

describe('run_code through the real bin is confined like bash (workspace-write)', () => {
  it('a program cannot write outside, find the key, spawn its way out or reach a loopback server; its tool calls still work', {
    timeout: 120_000,
  }, async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-code-confined-')))
    const home = join(root, 'home')
    const cwd = join(root, 'work')
    const outside = join(root, 'outside')
    for (const dir of [join(cwd, 'notes'), outside]) mkdirSync(dir, { recursive: true })
    writeFileSync(join(cwd, 'notes/a.md'), 'alpha\n')
    let connections = 0
    loopback = createServer((socket) => {
      connections++
      socket.end('host loopback\n')
    })
    await new Promise<void>((resolve) => loopback!.listen(0, '127.0.0.1', resolve))
    const port = (loopback.address() as { port: number }).port

    const patch = join(root, 'code.patch.yml')
    writeFileSync(
      patch,
      [
        // No temp dirs among the writable roots: `outside` (under the temp dir) is outside them all.
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
    const PROBE = [
      'const fs = process.getBuiltinModule("fs")',
      'const cp = process.getBuiltinModule("child_process")',
      'const net = process.getBuiltinModule("net")',
      'const attempt = (fn: () => unknown) => { try { fn(); return "done" } catch (e: any) { return e.code ?? String(e) } }',
      `const write = attempt(() => fs.writeFileSync(${JSON.stringify(join(outside, 'written.txt'))}, "pwned"))`,
      'const texts: string[] = [JSON.stringify(process.env)]',
      'for (const entry of fs.readdirSync("/proc")) {',
      '  if (!/^\\d+$|^self$/.test(entry)) continue',
      '  try { texts.push(fs.readFileSync(`/proc/${entry}/environ`, "latin1")) } catch {}',
      '}',
      'const key = texts.some((t) => t.includes("sk-test-code-runtime")) ? "found" : "absent"',
      `const spawned = cp.spawnSync("/bin/sh", ["-c", ${JSON.stringify(`echo pwned > ${join(outside, 'spawned.txt')}`)}]).status`,
      'const socket = await new Promise((resolve) => {',
      `  const s = net.connect(${port}, "127.0.0.1")`,
      '  s.on("data", () => resolve("connected"))',
      '  s.on("error", (e: any) => resolve(e.code))',
      '})',
      'const note = await tools.read({ file_path: "notes/a.md" })',
      'return { write, key, spawned, socket, note: note.includes("alpha"), env: Object.keys(process.env) }',
    ].join('\n')
    const runCode = (id: string, code: string) => ({ toolCalls: [{ id, name: 'run_code', arguments: { code } }] })
    server = await startMockServer({ steps: [runCode('c_probe', PROBE), { text: 'done' }] as never })
    // The built-in `code` agent preset: Code Mode presentation (run_code only).
    const env = {
      DSH_HOME: home,
      HOME: home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: KEY,
      DSH_PRESET: 'code',
    }
    const run = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'probe'], {
      cwd,
      env,
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const events = lines
      .filter((l) => l.type === 'event')
      .map((l) => l.event as { type: string; data: Record<string, any> })
    expect(
      (server.requests[0].body as { tools: Array<{ function: { name: string } }> }).tools.map((t) => t.function.name),
    ).toEqual(['run_code'])
    const result = events.find((e) => e.type === 'tool/result' && e.data.message.callId === 'c_probe')!.data
    const text = (result.message.content as Array<{ text: string }>).map((b) => b.text).join('')
    expect(result.error).toBeUndefined()
    const value = JSON.parse(text.slice(text.indexOf('{'))) as Record<string, unknown>
    expect(value).toMatchObject({ write: 'EROFS', key: 'absent', note: true, env: ['PATH'] })
    expect(value.spawned).not.toBe(0)
    expect(value.socket).toMatch(/^E(CONNREFUSED|NETUNREACH|ACCES|PERM)$/)
    expect(existsSync(join(outside, 'written.txt'))).toBe(false)
    expect(existsSync(join(outside, 'spawned.txt'))).toBe(false)
    expect(connections).toBe(0)
    // The tool call of the program went through the pipeline and was logged as a sub-call.
    expect(events.filter((e) => e.type === 'tool-run-code/call').map((e) => [e.data.callId, e.data.name])).toEqual([
      ['c_probe.1', 'read'],
    ])
    // The key never appears in what the model was sent back.
    expect(JSON.stringify(server.requests.map((r) => r.body))).not.toContain(KEY)
    expect(readFileSync(join(cwd, 'notes/a.md'), 'utf8')).toBe('alpha\n')
  })

  it('with no sandbox runner the program is refused with a clear error and nothing runs', {
    timeout: 120_000,
  }, async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-code-refused-')))
    const home = join(root, 'home')
    const cwd = join(root, 'work')
    mkdirSync(cwd, { recursive: true })
    const patch = join(root, 'code.patch.yml')
    writeFileSync(
      patch,
      ['- id: tools', '  config:', '    mode: code', '- id: sandbox', '  config:', '    runner: none', ''].join('\n'),
    )
    const target = join(cwd, 'ran.txt')
    const code = `process.getBuiltinModule("fs").writeFileSync(${JSON.stringify(target)}, "ran")`
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_refused', name: 'run_code', arguments: { code } }] },
        { text: 'refused' },
      ] as never,
    })
    const env = { DSH_HOME: home, HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: KEY }
    const run = await runDsh(['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'try'], {
      cwd,
      env,
    })
    expect(run.code).toBe(0)
    const events = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === 'event')
      .map((l) => l.event as { type: string; data: Record<string, any> })
    const result = events.find((e) => e.type === 'tool/result' && e.data.message.callId === 'c_refused')!.data
    expect(result.error.code).toBe('PROGRAM_REFUSED')
    expect(result.message.content[0].text).toMatch(
      /^Error \[PROGRAM_REFUSED\]: the program was not run\.\n\nProgram failed \(REFUSED\): the program was not run because the session's workspace-write sandbox cannot confine it: no working sandbox runner/,
    )
    expect(existsSync(target)).toBe(false)
  })
})
