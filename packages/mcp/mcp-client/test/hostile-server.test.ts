// Issue #35: an MCP server that offers tools dsh cannot use, answers over the message cap, or
// shares a tool name with another server. A real server on the official SDK's low-level `Server`
// (fixtures/hostile-server.mjs) over stdio, through the real subprocess seam and tool registry.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SubprocessLocal from '@dsh/subprocess-local'
import type { ToolResultPayload } from '@dsh/tools'
import McpClient, { type McpServerStatus } from '../src/index.ts'
import { hashedToolName } from '../src/names.ts'

const hostile = fileURLToPath(new URL('./fixtures/hostile-server.mjs', import.meta.url))
const fast = { retry: { initialDelayMs: 20, maxDelayMs: 100, maxAttempts: 2, stableMs: 60_000 } }

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(config: Record<string, unknown>): Promise<Harness> {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-mcp-hostile-'))
  harness = await createHarness({
    cwd,
    script: [] as never,
    plugins: [
      [SubprocessLocal, {}],
      [McpClient, { cwd, ...fast, ...config }],
    ] as never,
  })
  return harness
}

async function until<T>(probe: () => T | undefined | false, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = probe()
    if (value) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const status = (h: Harness, name: string): McpServerStatus | undefined => h.ctx.mcp.get(name)
const settled = (h: Harness, name: string) =>
  until(
    () => ['connected', 'failed'].includes(status(h, name)?.state ?? '') && status(h, name),
    `${name} connected or failed`,
  )
let calls = 0
function call(h: Harness, name: string, args: object): Promise<ToolResultPayload> {
  return h.ctx.tools.execute(
    { callId: `c${++calls}`, name, arguments: JSON.stringify(args) },
    { cwd: process.cwd(), sessionId: h.session.id },
  )
}
const text = (result: ToolResultPayload) =>
  result.message.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n')
const notices = (h: Harness) =>
  h.session.events.filter((e) => e.type === 'mcp/status').map((e) => (e.data as { message: string }).message)

describe('MCP tools dsh cannot use', () => {
  it('skips each refused tool with a notice naming server, tool and reason; the other tools load', async () => {
    const h = await boot({ servers: { hostile: { command: process.execPath, args: [hostile] } } })
    const s = await settled(h, 'hostile')
    // Before: tools/list was validated whole, the server failed and was reported as killed by SIGTERM.
    expect(s.state).toBe('connected')
    expect(s.error).toBeUndefined()
    expect(s.tools).toEqual(['mcp__hostile__echo', 'mcp__hostile__huge', 'mcp__hostile__huge_head_id'])
    const skipped = Object.fromEntries((s.skipped ?? []).map((x) => [x.tool, x.reason]))
    expect(Object.keys(skipped).sort()).toEqual(['42', 'bad_output', 'bad_type', 'no_schema', 'not_object'])
    expect(skipped.not_object).toMatch(/does not follow the MCP schema \(inputSchema\.type: /)
    expect(skipped.no_schema).toMatch(/does not follow the MCP schema \(inputSchema: /)
    expect(skipped['42']).toMatch(/does not follow the MCP schema \(name: /)
    expect(skipped.bad_output).toMatch(/^its output schema is invalid \(.*type.*\)$/)
    expect(skipped.bad_type).toMatch(/^the tool registry refused it: .*type.*nope/)
    const notice = notices(h).find((m) => m.includes('skipped'))
    expect(notice).toMatch(
      /^MCP server "hostile": skipped tool "not_object" \(.+\); .*tool "bad_type" \(the tool registry refused it: .+\).* Its other tools are available\.$/,
    )
    expect(text(await call(h, 'mcp__hostile__echo', { text: 'still here' }))).toBe('hostile: still here')
  })

  it('a list_changed refresh does not repeat the notice for tools already reported', async () => {
    const h = await boot({ servers: { hostile: { command: process.execPath, args: [hostile] } } })
    await settled(h, 'hostile')
    expect(notices(h).filter((m) => m.includes('skipped'))).toHaveLength(1)
    let refreshed = 0
    h.ctx.on('mcp/status', (s) => void (s.name === 'hostile' && s.state === 'connected' && refreshed++))
    expect(text(await call(h, 'mcp__hostile__echo', { text: 'relist' }))).toBe('hostile: relist')
    // The refresh re-read the list (and re-skipped the same tools) without a second notice.
    await until(() => refreshed > 0, 'the refresh after list_changed')
    expect(status(h, 'hostile')?.skipped).toHaveLength(5)
    expect(notices(h).filter((m) => m.includes('skipped'))).toHaveLength(1)
  })
})

describe('MCP connection failures', () => {
  it('are reported by what failed, not by the SIGTERM the cleanup sends', async () => {
    const h = await boot({
      servers: { hostile: { command: process.execPath, args: [hostile], env: { DSH_TEST_TOOLS: 'list-error' } } },
    })
    const s = await settled(h, 'hostile')
    expect(s.state).toBe('failed')
    // Before: "the server process was killed by SIGTERM".
    expect(s.error).toContain('the tool catalogue is locked')
    expect(s.error).not.toMatch(/SIGTERM/)
  })
})

describe('MCP answers over the message cap', () => {
  it.each([
    ['the SDK (id written last)', 'mcp__hostile__huge'],
    ['a server writing the id first', 'mcp__hostile__huge_head_id'],
  ])(
    'fail the pending call at once with MCP_TOO_LARGE (%s); the server stays usable',
    async (_label, tool) => {
      // callTimeoutMs is far above the test timeout: only the size error can end the call in time.
      const h = await boot({
        callTimeoutMs: 600_000,
        servers: { hostile: { command: process.execPath, args: [hostile], env: { DSH_TEST_TOOLS: 'plain' } } },
      })
      await settled(h, 'hostile')
      const result = await call(h, tool, { mib: 11 })
      expect(result.error?.code).toBe('MCP_TOO_LARGE')
      expect(text(result)).toMatch(/was 11\.0 MiB, over the 10\.0 MiB message cap/)
      expect(status(h, 'hostile')?.state).toBe('connected')
      // The line after the dropped one parses: the connection is intact.
      expect(text(await call(h, 'mcp__hostile__echo', { text: 'after' }))).toBe('hostile: after')
      // Positive control: an answer under the cap still arrives whole.
      const fine = await call(h, 'mcp__hostile__huge', { mib: 1 })
      expect(fine.error).toBeUndefined()
    },
    60_000,
  )
})

describe('two MCP servers claiming one tool name', () => {
  const spec = (label: string) => ({
    command: process.execPath,
    args: [hostile],
    env: { DSH_TEST_TOOLS: 'plain', DSH_TEST_LABEL: label },
  })
  const dot = hashedToolName('a.b', 'echo')
  const under = hashedToolName('a_b', 'echo')

  it.each([
    ['a_b first', 'a_b', 'under', 'a.b', 'dot'],
    ['a.b first', 'a.b', 'dot', 'a_b', 'under'],
  ])(
    'both are registered under hashed names with a notice, whatever connects first (%s)',
    async (_label, first, firstLabel, second, secondLabel) => {
      const h = await boot({ servers: { [first]: spec(firstLabel) } })
      await settled(h, first)
      // Alone, the server's tool has the plain name.
      expect(text(await call(h, 'mcp__a_b__echo', { text: 'x' }))).toBe(`${firstLabel}: x`)
      const drop = h.ctx.mcp.add(second, spec(secondLabel))
      await settled(h, second)
      await until(() => h.ctx.tools.get(dot) && h.ctx.tools.get(under), 'both hashed names')
      // Before: the first server kept mcp__a_b__echo and the second's tool was dropped (registry
      // duplicate), so which tool the model reached depended on connection timing.
      expect(h.ctx.tools.get('mcp__a_b__echo')).toBeUndefined()
      expect(text(await call(h, dot, { text: 'x' }))).toBe('dot: x')
      expect(text(await call(h, under, { text: 'x' }))).toBe('under: x')
      const notice = notices(h).find((m) => m.includes('both offer'))
      expect(notice).toContain('"a.b" and "a_b" both offer a tool named mcp__a_b__echo')
      expect(notice).toContain(dot)
      expect(notice).toContain(under)
      // The other tools of both servers were contested the same way.
      expect(status(h, first)?.tools).toHaveLength(3)
      expect(status(h, first)?.tools.every((name) => /_[0-9a-f]{8}$/.test(name))).toBe(true)
      // When one server goes, the other's tool takes the plain name back.
      drop()
      await until(() => h.ctx.tools.get('mcp__a_b__echo'), 'the plain name back')
      expect(text(await call(h, 'mcp__a_b__echo', { text: 'y' }))).toBe(`${firstLabel}: y`)
      expect(h.ctx.tools.get(first === 'a_b' ? under : dot)).toBeUndefined()
    },
  )
})
