// End-to-end (issue #35): the real `dsh` bin with a trusted project whose .mcp.json starts a
// server (official SDK) offering tools dsh cannot use and answers over the message cap. The
// server's usable tools load and the refused ones are named with why (`dsh mcp list --json`), and a
// call answered over the cap fails at once with MCP_TOO_LARGE (`dsh --profile headless`).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const hostile = fileURLToPath(new URL('./fixtures/hostile-server.mjs', import.meta.url))

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

async function project(env: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-mcp-hostile-'))
  const home = join(root, 'home')
  const cwd = join(root, 'project')
  mkdirSync(cwd, { recursive: true })
  writeFileSync(
    join(cwd, '.mcp.json'),
    JSON.stringify({ mcpServers: { hostile: { command: process.execPath, args: [hostile], env } } }),
  )
  expect((await runDsh(['trust', cwd], { cwd, env: { DSH_HOME: home } })).code).toBe(0)
  return { cwd, home }
}

describe('dsh with an MCP server offering tools it cannot use', () => {
  it('dsh mcp list: the server is connected with its usable tools; each refused tool is named with why', {
    timeout: 60_000,
  }, async () => {
    const { cwd, home } = await project()
    const run = await runDsh(['mcp', 'list', '--json'], { cwd, env: { DSH_HOME: home } })
    expect(run.code).toBe(0)
    const [row] = JSON.parse(run.stdout) as Array<{
      name: string
      state: string
      tools: string[]
      error?: string
      skipped?: Array<{ tool: string; reason: string }>
    }>
    // Before: state "failed", error "the server process was killed by SIGTERM", no tools.
    expect(row).toMatchObject({
      name: 'hostile',
      state: 'connected',
      tools: ['mcp__hostile__echo', 'mcp__hostile__huge', 'mcp__hostile__huge_head_id'],
    })
    expect(row.error).toBeUndefined()
    expect(row.skipped?.map((s) => s.tool).sort()).toEqual(['42', 'bad_output', 'bad_type', 'no_schema', 'not_object'])
    expect(row.skipped?.find((s) => s.tool === 'bad_output')?.reason).toMatch(/^its output schema is invalid \(.+\)$/)
  })

  it('a call answered over the message cap fails at once with MCP_TOO_LARGE', { timeout: 60_000 }, async () => {
    const { cwd, home } = await project({ DSH_TEST_TOOLS: 'plain' })
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_huge', name: 'mcp__hostile__huge', arguments: { mib: 11 } }] },
        { text: 'done' },
      ] as never,
    })
    const run = await runDsh(['--profile', 'headless', '--output-format', 'json', 'fetch the big thing'], {
      cwd,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
    })
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ reason: 'completed', result: 'done' })
    const second = server.requests[1].body as { messages: { role: string; content: string }[] }
    const answer = second.messages.filter((m) => m.role === 'tool').at(-1)!.content
    // Before: the call waited for callTimeoutMs (120 s), past this test's timeout.
    expect(answer).toMatch(
      /^Error \[MCP_TOO_LARGE\]: the answer of tool "mcp__hostile__huge" \(MCP server "hostile"\) was 11\.0 MiB, over the 10\.0 MiB message cap/,
    )
  })
})
