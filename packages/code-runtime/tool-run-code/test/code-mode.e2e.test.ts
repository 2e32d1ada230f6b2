// Keyless end-to-end through the real `dsh` bin and the scripted model server: the headless
// profile with `tools.mode: code`. One run_code program reads two files, greps and writes a summary
// with an approval inside it (a bash sandbox escalation, allowed by the run's permission preset);
// an infinite loop is stopped by the time limit; a throwing program shows its own stack.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
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

const SUMMARY = [
  'const [a, b] = await Promise.all([tools.read({ file_path: "notes/a.md" }), tools.read({ file_path: "notes/b.md" })])',
  'const hits: string = await tools.grep({ pattern: "TODO", path: "notes" })',
  'const todos = hits.split("\\n").filter((l) => /TODO: \\w+/.test(l)).map((l) => l.slice(l.indexOf("TODO"))).sort()',
  'const words = a.includes("alpha") && b.includes("beta") ? "both notes read" : "notes missing"',
  'await tools.write({ file_path: "summary.md", content: `# Summary (${words})\\n${todos.map((t) => "- " + t).join("\\n")}\\n` })',
  'const check = await tools.bash({ command: "wc -l < summary.md", description: "count lines", sandbox_escalation: { justification: "check the summary outside the sandbox" } })',
  'console.log("checked:", check.trim())',
  'return { todo: todos.length }',
].join('\n')

const THROWS = [
  'function must(ok: boolean, what: string): void {',
  '  if (!ok) throw new Error(`missing ${what}`)',
  '}',
  'must(true, "a")',
  'must(false, "b")',
].join('\n')

describe('Code Mode end to end (dsh --profile headless, tools.mode: code)', () => {
  it('reads, greps and writes through run_code with an approval inside; a loop hits the time limit; a throw shows its own stack', {
    timeout: 120_000,
  }, async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-code-mode-')))
    const home = join(root, 'home')
    const cwd = join(root, 'work')
    mkdirSync(join(cwd, 'notes'), { recursive: true })
    writeFileSync(join(cwd, 'notes/a.md'), 'alpha\nTODO: first\n')
    writeFileSync(join(cwd, 'notes/b.md'), 'TODO: second\nbeta\n')
    const patch = join(root, 'code.patch.yml')
    writeFileSync(
      patch,
      [
        '- id: tools',
        '  config:',
        '    mode: code',
        '- id: permission-presets',
        '  config:',
        '    default: e2e',
        '    env: ""',
        '    presets:',
        '      e2e: { mode: workspace-write, approval: never, description: "confined, escalations allowed" }',
        // An unregistered event type would fail the run: the sub-call events must be registered.
        '- id: session-persistence-jsonl',
        '  config:',
        '    compression: zstd',
        '    batchWindowMs: 20',
        '    unknownEventTypes: refuse',
        '',
      ].join('\n'),
    )
    const runCode = (id: string, code: string, extra: object = {}) => ({
      toolCalls: [{ id, name: 'run_code', arguments: { code, ...extra } }],
    })
    server = await startMockServer({
      steps: [
        { expect: { tools: ['run_code'] }, ...runCode('c_sum', SUMMARY) },
        runCode('c_loop', 'let n = 0\nwhile (true) n++', { timeout_ms: 500 }),
        runCode('c_throw', THROWS),
        { text: 'summary written' },
      ] as never,
    })
    const env = {
      DSH_HOME: home,
      HOME: home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    }
    const run = await runDsh(
      ['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'summarise the notes'],
      { cwd, env },
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: 'summary written', reason: 'completed' })

    // The model saw run_code only, with the generated API of the other tools in the prompt.
    const first = server.requests[0].body as {
      tools: Array<{ function: { name: string } }>
      messages: Array<{ role: string; content: string }>
    }
    expect(first.tools.map((t) => t.function.name)).toEqual(['run_code'])
    const system = first.messages.find((m) => m.role === 'system')!.content
    expect(system).toContain('declare const tools: {')
    expect(system).toMatch(/\n {2}read\(args: \{/)
    expect(system).toMatch(/\n {2}bash\(args: \{/)

    expect(readFileSync(join(cwd, 'summary.md'), 'utf8')).toBe(
      '# Summary (both notes read)\n- TODO: first\n- TODO: second\n',
    )
    const events = lines
      .filter((l) => l.type === 'event')
      .map((l) => l.event as { type: string; data: Record<string, any> })
    const results = new Map(
      events.filter((e) => e.type === 'tool/result').map((e) => [e.data.message.callId as string, e.data]),
    )
    const text = (id: string) =>
      (results.get(id)!.message.content as Array<{ text: string }>).map((b) => b.text).join('')

    expect(text('c_sum')).toBe(
      [
        'Console output:',
        'checked: 3',
        '[note: sandbox: the user approved running this command outside the sandbox (this once).]',
        '[exit code: 0]',
        '',
        'Return value:',
        '{\n  "todo": 2\n}',
      ].join('\n'),
    )
    // Each sub-call is its own logged pair; the bash call ran unconfined after the approval.
    const subCalls = events.filter((e) => e.type === 'tool-run-code/call').map((e) => [e.data.callId, e.data.name])
    expect(subCalls).toEqual([
      ['c_sum.1', 'read'],
      ['c_sum.2', 'read'],
      ['c_sum.3', 'grep'],
      ['c_sum.4', 'write'],
      ['c_sum.5', 'bash'],
    ])
    const bash = events.find((e) => e.type === 'tool-run-code/result' && e.data.callId === 'c_sum.5')!.data.result
    expect(bash.error).toBeUndefined()
    expect(bash.message.content[0].text).toContain(
      'the user approved running this command outside the sandbox (this once)',
    )

    expect(results.get('c_loop')!.error.code).toBe('PROGRAM_TIMEOUT')
    expect(text('c_loop')).toContain('the program ran longer than its 500 ms limit and was stopped')

    expect(results.get('c_throw')!.error.code).toBe('PROGRAM_THROWN')
    expect(text('c_throw')).toBe(
      [
        'Error [PROGRAM_THROWN]: the program did not finish.',
        '',
        'Program failed (THROWN): Error: missing b',
        '    at must (program.ts:2:18)',
        '    at program.ts:5:1',
      ].join('\n'),
    )

    // A direct call to another tool would have been refused: only run_code is callable by the model.
    expect(events.filter((e) => e.type === 'tool/call').map((e) => e.data.name)).toEqual([
      'run_code',
      'run_code',
      'run_code',
    ])
  })
})
