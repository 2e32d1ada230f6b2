// Every event type the headless composition can write is registered with session persistence, so
// every session it writes can be resumed. Nothing here is a hand-kept list:
// - the mounted packages come from composing the real profile (@dsh/app-boot's composeProfile);
//   each one's sources and its @dsh dependencies' sources are scanned for the event types they
//   declare (`interface SessionEventMap { 'x/y': ... }`) or append (`.append('x/y'`);
// - a real run of the `dsh` bin calls every tool the model is offered (the run fails when a tool
//   is offered that the script does not call, so a new base tool extends this test);
// - that run uses `unknownEventTypes: refuse`, so an unregistered append fails the run loudly, and a
//   probe row reports what persistence accepts and every persistence warning;
// - the stored session is then resumed by a second process (`--continue`).
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { composeProfile, type ResolvedRow } from '@dsh/app-boot'

const probe = fileURLToPath(new URL('./fixtures/event-type-probe.mjs', import.meta.url))
const repo = fileURLToPath(new URL('../../../../', import.meta.url))
const installBase = join(repo, 'packages/boot/cli/package.json')

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** package.json name -> directory, for every workspace package. */
function workspacePackages(): Map<string, string> {
  const out = new Map<string, string>()
  for (const top of ['packages', 'bundles']) {
    const base = join(repo, top)
    const dirs =
      top === 'bundles'
        ? readdirSync(base).map((d) => join(base, d))
        : readdirSync(base).flatMap((f) => readdirSync(join(base, f)).map((d) => join(base, f, d)))
    for (const dir of dirs) {
      const manifest = join(dir, 'package.json')
      if (existsSync(manifest)) out.set(JSON.parse(readFileSync(manifest, 'utf8')).name, dir)
    }
  }
  return out
}

function packageDirOf(file: string): string {
  let dir = dirname(file)
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir)
  return dir
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.(ts|mts|mjs|js)$/.test(entry) && !entry.endsWith('.d.ts') ? [path] : []
  })
}

/** Keys of `interface SessionEventMap { ... }` blocks and literal `.append('ns/name'` types. */
export function declaredEventTypes(source: string): string[] {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
  const types = new Set<string>()
  for (const match of text.matchAll(/interface\s+SessionEventMap\s*\{/g)) {
    let depth = 0
    let top = ''
    for (let i = match.index! + match[0].length - 1; i < text.length; i++) {
      const c = text[i]
      if (c === '{') depth++
      else if (c === '}' && --depth === 0) break
      else if (depth === 1) top += c
    }
    for (const key of top.matchAll(/['"]([^'"\s]+)['"]\s*\??\s*:/g)) types.add(key[1])
  }
  for (const call of text.matchAll(/\.append\(\s*['"]([a-z][\w-]*\/[\w/-]+)['"]/g)) types.add(call[1])
  return [...types]
}

/** Every event type the mounted packages (and the @dsh packages they depend on) can write. */
function composedEventTypes(rows: ResolvedRow[]): Map<string, string> {
  const packages = workspacePackages()
  const seen = new Set<string>()
  const queue: string[] = []
  const visit = (row: ResolvedRow) => {
    if (row.row.disabled) return
    if (row.url?.startsWith('file:')) queue.push(packageDirOf(fileURLToPath(row.url)))
    for (const child of row.children ?? []) visit(child)
  }
  rows.forEach(visit)
  expect(queue.length).toBeGreaterThan(20)
  const found = new Map<string, string>()
  while (queue.length > 0) {
    const dir = queue.pop()!
    if (seen.has(dir)) continue
    seen.add(dir)
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
    for (const dep of Object.keys(manifest.dependencies ?? {})) {
      const depDir = packages.get(dep)
      if (depDir) queue.push(depDir)
    }
    for (const file of sourceFiles(join(dir, 'src'))) {
      const source = readFileSync(file, 'utf8')
      // Test-support entry points (a contract suite, fixtures) are not part of a running app.
      if (/from ['"]vitest['"]/.test(source)) continue
      for (const type of declaredEventTypes(source))
        if (!found.has(type)) found.set(type, `${manifest.name} (${file.slice(repo.length)})`)
    }
  }
  return found
}

describe('the headless composition registers every event type it can write', () => {
  it('derives the declared types, runs every offered tool under unknownEventTypes: refuse, and resumes the session', {
    timeout: 120_000,
  }, async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-event-types-')))
    const home = join(root, 'home')
    const cwd = join(root, 'work')
    mkdirSync(cwd, { recursive: true })
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
    // A 1x1 PNG for read_image.
    writeFileSync(
      join(cwd, 'dot.png'),
      Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
        'base64',
      ),
    )
    const out = join(root, 'probe.json')
    const patch = join(root, 'strict.patch.yml')
    writeFileSync(
      patch,
      [
        '- id: session-persistence-jsonl',
        '  config:',
        '    compression: zstd',
        '    batchWindowMs: 20',
        '    unknownEventTypes: refuse',
        '- insert:',
        '    - id: event-type-probe',
        `      name: ${JSON.stringify(probe)}`,
        '      config:',
        `        out: ${JSON.stringify(out)}`,
        '',
      ].join('\n'),
    )
    const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })
    const script: Array<{ toolCalls?: Array<{ id: string; name: string; arguments: object }>; text?: string }> = [
      // Deferred tools (@dsh/tool-deferral): two loaded by name, the rest loaded by calling them.
      call('c_load', 'load_tools', { names: ['read_image', 'todo_write'] }),
      call('c_read', 'read', { file_path: 'notes.txt' }),
      call('c_image', 'read_image', { file_path: 'dot.png' }),
      call('c_write', 'write', { file_path: 'new.txt', content: 'one\n' }),
      call('c_edit', 'edit', { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' }),
      call('c_grep', 'grep', { pattern: 'gam+a' }),
      call('c_glob', 'glob', { pattern: '*.txt' }),
      call('c_bash', 'bash', { command: 'wc -l notes.txt', description: 'count lines' }),
      call('c_todo', 'todo_write', {
        todos: [
          { content: 'Edit notes', status: 'completed' },
          { content: 'Report', status: 'in_progress' },
        ],
      }),
      // A foreground child: its own (linked) session takes the next model answer.
      call('c_sub', 'subagent', { description: 'count', prompt: 'Say done.' }),
      { text: 'child done' },
      call('c_agents', 'list_agents', {}),
      // sub-1 has finished: both answer with a model-visible refusal (listed below as expected).
      call('c_send', 'send_message', { id: 'sub-1', message: 'one more thing' }),
      call('c_interrupt', 'interrupt_agent', { id: 'sub-1' }),
      call('c_bg', 'bash', { command: 'sleep 30', description: 'wait in the background', run_in_background: true }),
      call('c_out', 'job_output', { id: 'bash-1' }),
      call('c_jobs', 'job_list', {}),
      call('c_kill', 'job_kill', { id: 'bash-1' }),
      // completed within the turn, so the goal round driver starts no round
      call('c_goal', 'create_goal', { objective: 'Every tool ran' }),
      call('c_goal_get', 'get_goal', {}),
      call('c_goal_done', 'update_goal', { goal_id: 'goal-1', status: 'complete' }),
      call('c_sched', 'schedule_create', { after_seconds: 600, prompt: 'check again' }),
      call('c_sched_list', 'schedule_list', {}),
      call('c_sched_cancel', 'schedule_cancel', { id: 'sch-1' }),
      // loopback is refused by default and no search key is set: model-visible refusals (below)
      call('c_fetch', 'web_fetch', { url: 'http://127.0.0.1:9/' }),
      call('c_search', 'web_search', { queries: ['dsh'] }),
      // no language server serves a .txt file: a model-visible NO_LANGUAGE_SERVER (below)
      call('c_lsp', 'lsp', { operation: 'document_symbols', file_path: 'notes.txt' }),
      { text: 'all tools ran' },
      { text: 'resumed fine' },
    ]
    server = await startMockServer({ steps: script as never })
    const env = {
      DSH_HOME: home,
      HOME: home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    }
    const run = await runDsh(
      ['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'use every tool'],
      { cwd, env },
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: 'all tools ran', reason: 'completed' })

    // Every tool the model is offered was called by the script.
    const offered = ((server.requests[0].body as { tools?: Array<{ function: { name: string } }> }).tools ?? [])
      .map((t) => t.function.name)
      .sort()
    const called = script.flatMap((s) => s.toolCalls ?? []).map((c) => c.name)
    expect(
      offered.filter((name) => !called.includes(name)),
      'offered tools the script does not call',
    ).toEqual([])
    const expectedRefusals = ['c_send', 'c_interrupt', 'c_fetch', 'c_search', 'c_lsp']
    const failedCalls = lines.filter(
      (l) =>
        l.type === 'event' &&
        l.event.type === 'tool/result' &&
        l.event.data.error &&
        !expectedRefusals.includes(l.event.data.message.callId),
    )
    expect(
      failedCalls.map((l) => l.event.data.error),
      'tool calls that failed',
    ).toEqual([])

    // What persistence accepts, and nothing it complained about.
    const probed = JSON.parse(readFileSync(out, 'utf8')) as { known: string[]; warnings: string[] }
    expect(probed.warnings).toEqual([])

    // Types written by the run, and types any mounted package declares or appends.
    const written = [...new Set(lines.filter((l) => l.type === 'event').map((l) => l.event.type as string))]
    expect(written).toEqual(expect.arrayContaining(['todo/write', 'tool/started']))
    const composition = composeProfile({ home, profileName: 'headless', patches: [patch], installBase, cwd })
    const declared = composedEventTypes(composition.rows)
    expect([...declared.keys()]).toEqual(expect.arrayContaining(['todo/write', 'turn/start']))
    const unregistered = [...written, ...declared.keys()].filter((type) => !probed.known.includes(type))
    expect(
      unregistered.map(
        (type) => `${type}${declared.has(type) ? ` (from ${declared.get(type)})` : ' (written by the run)'}`,
      ),
      'event types not registered with session persistence',
    ).toEqual([])

    // The stored session loads again in a new process and continues.
    const resumed = await runDsh(
      ['--profile', 'headless', '--patch', patch, '--continue', '--output-format', 'json', 'and now?'],
      { cwd, env },
    )
    expect(resumed.stderr).toBe('')
    expect(resumed.code).toBe(0)
    expect(JSON.parse(resumed.stdout)).toMatchObject({ sessionId: lines.at(-1).sessionId, result: 'resumed fine' })
  })
})
