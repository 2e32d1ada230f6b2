// In process: the jsonrpc plugin mounted into a real tree (agent-loop testkit + approval service),
// spoken to over in-memory streams with the protocol's own connection.
import { PassThrough } from 'node:stream'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createHarness, SCRIPTED_MODEL, type Harness } from '@dsh/agent-loop-testkit'
import ApprovalService from '@dsh/user-approval'
import { JsonRpcConnection } from '@dsh/sdk-protocol'
import * as jsonrpc from '../src/index.ts'

let tree: Harness | undefined
afterEach(async () => {
  delete (globalThis as Record<symbol, unknown>)[jsonrpc.STDIO_KEY]
  await tree?.dispose()
  tree = undefined
})

async function setup(script: unknown[]) {
  tree = await createHarness({ script: script as never })
  await tree.mount(ApprovalService as never)
  const input = new PassThrough()
  const output = new PassThrough()
  ;(globalThis as Record<symbol, unknown>)[jsonrpc.STDIO_KEY] = { input, output }
  const notes: Array<{ method: string; params: any }> = []
  const client = new JsonRpcConnection({
    write: (t) => void input.write(t),
    strict: true,
    onNotification: (method, params) => notes.push({ method, params }),
  })
  output.on('data', (chunk) => client.receive(chunk))
  const handle = await tree.mount(jsonrpc as never, { waitForReady: false })
  return { client, notes, handle, input, ctx: tree.ctx, provider: tree.model.provider }
}

describe('jsonrpc plugin (in process)', () => {
  it('serves a prompt on the mounted tree', async () => {
    const { client, notes, provider } = await setup([{ text: 'in-process answer' }])
    await client.request('initialize', { protocolVersion: 1 })
    const { sessionId } = await client.request<any>('session/create', {
      cwd: process.cwd(),
      model: `${provider}/${SCRIPTED_MODEL}`,
    })
    expect(await client.request('session/prompt', { sessionId, prompt: 'hi' })).toEqual({ turn: 0 })
    while (!notes.some((n) => n.method === 'session/status' && n.params.status === 'idle'))
      await new Promise((r) => setTimeout(r, 5))
    const idle = notes.find((n) => n.method === 'session/status' && n.params.status === 'idle')!
    expect(idle.params.result).toMatchObject({ reason: 'completed', text: 'in-process answer' })
  })

  it('unloading the plugin unregisters its approval answerer and stops reading', async () => {
    const { client, handle, ctx } = await setup([])
    const approval = (ctx as unknown as { approval: ApprovalService }).approval
    expect(approval.answerers()).toContain('sdk-jsonrpc')
    await client.request('initialize', { protocolVersion: 1 })
    await handle.dispose()
    expect(approval.answerers()).not.toContain('sdk-jsonrpc')
    // Every reply on the wire.
    const { output } = (globalThis as Record<symbol, { output: PassThrough }>)[jsonrpc.STDIO_KEY]
    const replies: Array<{ id: unknown; error?: { data?: { code?: string } } }> = []
    let buffered = ''
    output.on('data', (chunk) => {
      buffered += chunk
      const lines = buffered.split('\n')
      buffered = lines.pop()!
      for (const line of lines) {
        const message = line.trim() ? JSON.parse(line) : {}
        if ('result' in message || 'error' in message) replies.push(message)
      }
    })
    // Positive control: a fresh (uninitialized) server on the same streams, whose listener comes
    // after the unloaded one's, answers the request through the same path; an unloaded server
    // still reading would have answered it first (SHUTTING_DOWN).
    const fresh = await tree!.mount(jsonrpc as never, { waitForReady: false })
    void client.request('session/list', {}).catch(() => {})
    await vi.waitFor(() => expect(replies.map((r) => r.error?.data?.code)).toContain('NOT_INITIALIZED'), {
      timeout: 10_000,
      interval: 5,
    })
    expect(replies.map((r) => r.error?.data?.code)).toEqual(['NOT_INITIALIZED'])
    await fresh.dispose()
  })
})
