// The pieces split out of server.ts and index.ts (issue 36), pinned on their own: the retry delay,
// the tool-list checks (with the SDK loaded, as a connection has it), the output-schema verdicts,
// registry parameters, and how a failed call reads.
import { describe, expect, it } from 'vitest'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { retryDelay } from '../src/connection-types.ts'
import { callFailure, describeFailure, firstLine, zodSummary } from '../src/failures.ts'
import { loadSdk } from '../src/sdk.ts'
import { checkListedTools, keyOf, outputProblem, parametersOf } from '../src/tool-list.ts'
import { ServerCatalog } from '../src/server-catalog.ts'

const retry = { initialDelayMs: 100, maxDelayMs: 1000, maxAttempts: 5, stableMs: 1000 }

describe('retryDelay', () => {
  it('doubles per failure up to the cap, and is 50-100 % of that', () => {
    for (const [failures, ceiling] of [
      [1, 100],
      [2, 200],
      [3, 400],
      [4, 800],
      [5, 1000],
      [9, 1000],
    ] as const) {
      for (let i = 0; i < 20; i++) {
        const delay = retryDelay(retry, failures)
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2)
        expect(delay).toBeLessThanOrEqual(ceiling)
      }
    }
  })
})

describe('checkListedTools', () => {
  it('keeps valid tools and skips each bad one with a reason', async () => {
    await loadSdk()
    const checked = checkListedTools(
      [
        { name: 'ok', inputSchema: { type: 'object' } },
        { name: 'task_only', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } },
        { name: 7 },
        { name: 'typed', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } },
      ],
      { getValidator: () => (value) => ({ valid: typeof value === 'object' }) },
    )
    expect(checked.tools.map((t) => t.name)).toEqual(['ok', 'typed'])
    expect(checked.skipped).toEqual([
      { tool: 'task_only', reason: 'it can only run as an MCP task, which dsh does not start' },
      { tool: '7', reason: expect.stringMatching(/^its definition does not follow the MCP schema \(name: /) },
    ])
    expect([...checked.checks.keys()]).toEqual(['typed'])
  })

  it('skips a tool whose output schema the validator cannot compile', async () => {
    await loadSdk()
    const checked = checkListedTools(
      [
        {
          name: 'bad',
          inputSchema: { type: 'object' },
          outputSchema: { type: 'object', properties: { n: { type: 'x' } } },
        },
      ],
      {
        getValidator: () => {
          throw new Error('unknown type "x"\nmore detail')
        },
      },
    )
    expect(checked.tools).toEqual([])
    expect(checked.skipped).toEqual([{ tool: 'bad', reason: 'its output schema is invalid (unknown type "x")' }])
  })
})

describe('outputProblem, keyOf, parametersOf', () => {
  const check = (value: unknown) => ({ valid: (value as { n?: unknown }).n === 1, errorMessage: 'n must be 1' })
  it('checks structured content against the output schema, never an error result', () => {
    expect(outputProblem(undefined, { content: [] }, 't', 's')).toBeUndefined()
    expect(outputProblem(check, { isError: true }, 't', 's')).toBeUndefined()
    expect(outputProblem(check, { structuredContent: { n: 1 } }, 't', 's')).toBeUndefined()
    expect(outputProblem(check, {}, 't', 's')).toBe(
      'tool "t" (MCP server "s") declares an output schema but returned no structured content.',
    )
    expect(outputProblem(check, { structuredContent: { n: 2 } }, 't', 's')).toBe(
      'tool "t" (MCP server "s") returned structured content that does not match its output schema: n must be 1.',
    )
  })
  it('keys a tool by what the registry shows, and makes its schema an object schema', () => {
    const tool = { name: 'a', description: 'd', inputSchema: { type: 'object' } } as Tool
    expect(keyOf(tool)).toBe(keyOf({ ...tool, title: 'other' } as Tool))
    expect(keyOf(tool)).not.toBe(keyOf({ ...tool, annotations: { readOnlyHint: true } } as Tool))
    expect(
      parametersOf({ name: 'a', inputSchema: { $schema: 'x', properties: { p: {} } } } as unknown as Tool),
    ).toEqual({ properties: { p: {} }, type: 'object' })
  })
})

describe('failure texts', () => {
  it('one line, the first issues of a zod error, and the cause code of a network error', () => {
    expect(firstLine(new Error('first\nsecond'))).toBe('first')
    expect(zodSummary({ issues: [{ path: ['a', 0], message: 'bad' }] })).toBe('a.0: bad')
    expect(zodSummary({})).toBe('invalid')
    const refused = Object.assign(new Error('fetch failed'), { cause: { code: 'ECONNREFUSED', message: 'connect' } })
    expect(describeFailure(refused, undefined)).toBe('fetch failed (ECONNREFUSED: connect)')
  })

  it('maps a timeout, a lost connection and a refusal to their codes', async () => {
    const sdk = await loadSdk()
    const at = {
      server: 's',
      tool: 'mcp__s__t',
      timeout: 2000,
      explain: (e: unknown) => String((e as Error)?.message ?? e),
    }
    const timeout = callFailure(new sdk.McpError(sdk.ErrorCode.RequestTimeout, 'slow'), at)
    expect(timeout.output.error?.code).toBe('MCP_TIMEOUT')
    expect(timeout.output.content).toContain('did not answer within 2 s')
    const lost = callFailure(new sdk.McpError(sdk.ErrorCode.ConnectionClosed, 'gone'), at)
    expect(lost.output.error?.code).toBe('MCP_DISCONNECTED')
    expect(lost.lost).toBe('MCP error -32000: gone')
    const refused = callFailure(new Error('nope'), at)
    expect(refused).toEqual({
      output: {
        content: 'Error [MCP_ERROR]: MCP server "s" refused the call to "mcp__s__t": nope',
        isError: true,
        error: { code: 'MCP_ERROR', message: 'MCP server "s" refused the call to "mcp__s__t": nope' },
      },
    })
  })
})

describe('ServerCatalog', () => {
  it('starts and clears empty; a snapshot is a copy', () => {
    const catalog = new ServerCatalog()
    expect(catalog.snapshot()).toEqual({ prompts: [], resources: [], templates: [] })
    const snap = catalog.snapshot()
    snap.prompts.push({ name: 'x' })
    expect(catalog.snapshot().prompts).toEqual([])
  })
})
