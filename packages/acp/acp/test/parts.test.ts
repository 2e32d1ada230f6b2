// The parts server.ts is made of that need no running server, called directly: the cwd check and
// the errors and rows of the session methods (session-open.ts), the running-call record that
// attributes a permission request (tool-calls.ts), client file routing by capability, and the
// permission answerer's fail-closed start (permission.ts). The in-process and e2e tests cover the
// same paths through a real client; these pin each part's own contract.
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type * as acp from '@agentclientprotocol/sdk'
import { SessionOpenError } from '@dsh/surface-kit'
import type { Connection, LiveSession } from '../src/live.ts'
import { askPermission, CHOICE_OPTIONS } from '../src/permission.ts'
import { checkCwd, listRows, loadError } from '../src/session-open.ts'
import { clientRoute, tracking } from '../src/tool-calls.ts'

const rpc = (fn: () => unknown) => {
  try {
    fn()
  } catch (error) {
    return error as acp.RequestError
  }
  throw new Error('expected a JSON-RPC error')
}

describe('session-open', () => {
  it('checkCwd accepts an existing absolute directory and names what is wrong otherwise', () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-parts-')))
    expect(checkCwd(`${dir}/./`)).toBe(dir)
    expect(rpc(() => checkCwd('relative/dir'))).toMatchObject({ code: -32602, message: /must be an absolute path/ })
    expect(rpc(() => checkCwd(join(dir, 'gone')))).toMatchObject({ code: -32602, message: /not an existing directory/ })
    writeFileSync(join(dir, 'file'), '')
    expect(rpc(() => checkCwd(join(dir, 'file')))).toMatchObject({ message: /not an existing directory/ })
    expect(rpc(() => checkCwd(42 as never))).toMatchObject({ message: /got 42/ })
  })

  it.each([
    ['NO_PERSISTENCE', -32601],
    ['NOT_FOUND', -32002],
    ['BAD_ID', -32602],
    ['LOCKED', -32600],
    ['FAILED', -32600],
  ] as const)('loadError maps %s to JSON-RPC %i', (code, rpcCode) => {
    const error = loadError(new SessionOpenError(code, 's1', 'the store said so', 'STORE'))
    expect(error.code).toBe(rpcCode)
    if (code === 'LOCKED') expect(error.message).toContain('cannot load session s1: the store said so')
  })

  it('listRows filters by cwd and titles a row by its title, else its first prompt, else null', () => {
    const row = (id: string, cwd: string, extra: object = {}) =>
      ({ id, cwd, createdAt: 0, updatedAt: 86_400_000, turns: 1, events: 2, ...extra }) as never
    const rows = [row('a', '/x', { title: 'T' }), row('b', '/x', { firstPrompt: 'P' }), row('c', '/y')]
    expect(listRows(rows, '/x').map((r) => [r.sessionId, r.title])).toEqual([
      ['a', 'T'],
      ['b', 'P'],
    ])
    expect(listRows(rows, undefined).map((r) => r.title)).toEqual(['T', 'P', null])
    expect(listRows(rows, null)[0].updatedAt).toBe('1970-01-02T00:00:00.000Z')
  })
})

function fakeLive(connection: Partial<Connection> = {}): LiveSession {
  return {
    id: 's1',
    cwd: '/',
    connection: { id: 1, capabilities: {}, sessions: new Set(), ...connection },
    queue: Promise.resolve(),
    running: [],
    permissions: new Set(),
    unsubscribe() {},
  } as unknown as LiveSession
}

describe('tool-calls', () => {
  it('tracking records the call while its body runs, last in, and forgets it on a throw', async () => {
    const live = fakeLive()
    const seen: string[][] = []
    await tracking(live, 'outer', async () => {
      seen.push([...live.running])
      await tracking(live, 'inner', async () => void seen.push([...live.running]))
      seen.push([...live.running])
    })
    expect(seen).toEqual([['outer'], ['outer', 'inner'], ['outer']])
    await expect(tracking(live, 'bad', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    expect(live.running).toEqual([])
    // No live session: the body runs as is.
    expect(await tracking(undefined, 'x', async () => 7)).toBe(7)
  })

  it('clientRoute routes only listed tools, only what the client advertised', () => {
    const client = {} as acp.AgentContext
    const tools = ['read', 'edit']
    expect(clientRoute(fakeLive({ client }), 'read', tools)).toBeUndefined()
    const both = fakeLive({ client, capabilities: { fs: { readTextFile: true, writeTextFile: true } } })
    expect(Object.keys(clientRoute(both, 'edit', tools) ?? {}).sort()).toEqual(['read', 'write'])
    expect(clientRoute(both, 'bash', tools)).toBeUndefined()
    const readOnly = fakeLive({ client, capabilities: { fs: { readTextFile: true, writeTextFile: false } } })
    expect(Object.keys(clientRoute(readOnly, 'read', tools) ?? {})).toEqual(['read'])
    const none = fakeLive({ client, capabilities: { fs: { readTextFile: false, writeTextFile: false } } })
    expect(clientRoute(none, 'read', tools)).toBeUndefined()
    expect(clientRoute(fakeLive({ capabilities: { fs: { readTextFile: true } } }), 'read', tools)).toBeUndefined()
  })
})

describe('permission', () => {
  it('offers one ACP option per dsh choice, and rejects when the session or its client is gone', async () => {
    expect(Object.values(CHOICE_OPTIONS).map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once'])
    const request = { id: 'r1', sessionId: 's1', title: 't', action: {}, options: ['allowed-once'] } as never
    const signal = new AbortController().signal
    for (const live of [undefined, fakeLive()])
      expect(await askPermission(live, request, signal, 0)).toEqual({
        decision: 'rejected',
        reason: 'the ACP client of this session is gone',
      })
  })
})
