// End-to-end: the real `dsh` bin with `--world e2b`, the model played by @dsh/llm-mock-server and
// E2B played by @dsh/e2b-standin (reached through the SDK's own E2B_API_URL / E2B_SANDBOX_URL).
// Bash and the file tools act in the sandbox's root, the host workspace stays untouched, and the
// sandbox is killed when the run ends.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
let server: MockServer | undefined
beforeAll(async () => {
  standin = await startE2bStandin()
})
afterAll(async () => {
  await standin.close()
})
afterEach(async () => {
  await server?.close()
  server = undefined
})

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-world-e2b-'))
  return { home: join(root, 'home'), cwd: root }
}

const env = (home: string, s: MockServer, extra: Record<string, string | undefined> = {}) => ({
  DSH_HOME: home,
  DEEPSEEK_BASE_URL: s.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  E2B_API_URL: standin.url,
  E2B_SANDBOX_URL: standin.url,
  E2B_API_KEY: standin.apiKey,
  ...extra,
})

/** The text of the last tool result the model saw in request `i`. */
const toolText = (s: MockServer, i: number) => {
  const messages = (s.requests[i].body as { messages: { role: string; content: string }[] }).messages
  return messages.filter((m) => m.role === 'tool').at(-1)!.content
}

describe('dsh -p --world e2b', () => {
  it('runs bash and edit in the sandbox, leaves the host workspace alone, kills the sandbox', async () => {
    const { home, cwd } = workspace()
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
    writeFileSync(join(cwd, '.gitignore'), 'home/\n')
    writeFileSync(join(cwd, '.env'), 'DEEPSEEK_API_KEY=sk-never-uploaded\n')
    const created: string[] = []
    const s = (server = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'hostname && ls -A', description: 'where am I' } }] },
        { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
        {
          toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } }],
        },
        { toolCalls: [{ name: 'bash', arguments: { command: 'cat notes.txt', description: 'show it' } }] },
        { text: 'Edited remotely.' },
      ] as never,
    }))
    const before = new Set(standin.sandboxes().map((x) => x.record.id))
    const watch = setInterval(() => {
      for (const sb of standin.sandboxes())
        if (!before.has(sb.record.id) && !created.includes(sb.record.id)) created.push(sb.record.id)
    }, 5)
    const run = await runDsh(['-p', '--world', 'e2b', 'make notes remotely'], {
      cwd,
      env: env(home, s),
      timeoutMs: 90_000,
    })
    clearInterval(watch)
    expect(run).toMatchObject({ code: 0, stdout: 'Edited remotely.\n' })
    // The first request's policy text says the remote sandbox is the confinement, not this
    // machine's writable roots, and keeps the credential rule.
    const first = (s.requests[0].body as { messages: { role: string; content: unknown }[] }).messages
    const policy = first.map((m) => JSON.stringify(m.content)).find((c) => c.includes('[sandbox policy]'))
    expect(policy).toContain('[sandbox policy] e2b world: commands and file edits run in a remote E2B sandbox')
    expect(policy).toContain('That sandbox is the confinement')
    expect(policy).toContain('Credential files (.env, .credentials.yaml, private keys) and .git were not uploaded')
    expect(policy).not.toContain('may write only under')
    // The change comes back as a saved patch, named in one stderr line, never applied.
    const saved =
      /^dsh: the E2B sandbox (i[0-9a-f]+) changed the workspace; patch saved to (\S+) \(review it, then apply it with: git -C \S+ apply \S+\)\n$/.exec(
        run.stderr,
      )
    expect(saved, run.stderr).not.toBeNull()
    const patch = readFileSync((saved as RegExpExecArray)[2], 'utf8')
    expect(patch).toContain('diff --git a/notes.txt b/notes.txt')
    expect(patch).toContain('-beta\n+gamma')
    // The commands ran in the sandbox (its hostname is its id) and saw the edit made by the file tools.
    const sandboxId = toolText(s, 1).split('\n')[0].trim()
    expect(sandboxId).toMatch(/^i[0-9a-f]+$/)
    // The workspace travelled per .gitignore (DSH_HOME under home/ and the .env stayed behind).
    expect(toolText(s, 1)).toMatch(new RegExp(`^${sandboxId}\\n\\.gitignore\\nnotes\\.txt\\n`))
    expect(toolText(s, 4)).toContain('alpha\ngamma')
    // The host's notes.txt is unchanged: the tree the tools changed is the sandbox's.
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\nbeta\n')
    // Exactly one sandbox was created for the run, and it is gone now.
    expect(
      standin.requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes' && r.sandboxId === sandboxId),
    ).toHaveLength(1)
    expect(standin.requests.some((r) => r.method === 'DELETE' && r.path === `/sandboxes/${sandboxId}`)).toBe(true)
    expect(standin.get(sandboxId)).toBeUndefined()
  })

  it('a missing key is one line in the tool result and no request to E2B', async () => {
    const { home, cwd } = workspace()
    const s = (server = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi', description: 'try' } }] },
        { text: 'No sandbox.' },
      ] as never,
    }))
    const before = standin.requests.length
    const run = await runDsh(['-p', '--world', 'e2b', 'try it'], {
      cwd,
      env: env(home, s, { E2B_API_KEY: undefined }),
      timeoutMs: 90_000,
    })
    expect(run.code).toBe(0)
    const result = toolText(s, 1)
    expect(result).toMatch(/the e2b world needs E2B_API_KEY \(an E2B API key\); set it in one of: /)
    expect(standin.requests.length).toBe(before)
  })

  it('a sandbox killed mid-command is said in the tool result (key from the project .env)', async () => {
    const { home, cwd } = workspace()
    // E2B_API_KEY is on the project .env allow-list: the run below gets it only from there.
    writeFileSync(join(cwd, '.env'), `E2B_API_KEY=${standin.apiKey}\n`)
    const s = (server = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo begun; sleep 60', description: 'long' } }] },
        { text: 'It died.' },
      ] as never,
    }))
    const before = new Set(standin.sandboxes().map((x) => x.record.id))
    let finished = false
    const running = runDsh(['-p', '--world', 'e2b', 'run long'], {
      cwd,
      env: env(home, s, { E2B_API_KEY: undefined }),
      timeoutMs: 90_000,
    }).finally(() => (finished = true))
    // Wait for the observable event (the command running in a new sandbox), then kill that sandbox;
    // a run that ends first (no sandbox at all) stops the wait and fails below.
    const sleeping = () =>
      standin
        .sandboxes()
        .find(
          (x) =>
            !before.has(x.record.id) &&
            [...x.processes.values()].some((p) => p.config.args.join(' ').includes('sleep 60')),
        )
    await expect.poll(() => finished || sleeping() !== undefined, { timeout: 60_000, interval: 20 }).toBe(true)
    const victim = sleeping()?.record.id
    expect(victim).toBeDefined()
    standin.kill(victim as string)
    const run = await running
    expect(run.code).toBe(0)
    const result = toolText(s, 1)
    expect(result).toContain(`the E2B sandbox ${victim} stopped (killed or expired) while this ran`)
  })
})
