// The ACP permission path fails closed, through the real `dsh-acp` bin with the official SDK
// client as the editor: a `session/request_permission` that the client answers with a JSON-RPC
// error, or never answers (past `permissionTimeoutMs`), is a rejection. The gated command writes a
// file, so "rejected" is checked on disk, not only in what the model is told; the positive control
// (the client allows) writes it.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import * as acp from '@agentclientprotocol/sdk'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { assertOnlyFrames, initialize, startAcp, workspace, type AcpProcess } from '@dsh/cli-testkit/acp'

let server: MockServer | undefined
const running: AcpProcess[] = []
/** Settles the permission requests a test left unanswered, so the client side can close. */
const release: Array<() => void> = []
afterEach(async () => {
  for (const r of release.splice(0)) r()
  for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL')
  await server?.close()
  server = undefined
})

const GATE = fileURLToPath(new URL('./fixtures/approval-gate.yml', import.meta.url))

/** A bash call that leaves `name` in the working directory when it runs. */
const writes = (name: string) => ({
  toolCalls: [{ name: 'bash', arguments: { command: `echo ran > ${name}`, description: `Write ${name}` } }],
})

/** What the model was told about the last tool call of request `i`. */
const toolText = (s: MockServer, i: number) => {
  const messages = (s.requests[i].body as { messages: { role: string; content: string }[] }).messages
  return messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
}

async function setup(steps: unknown[], permissionTimeoutMs: number) {
  const { home, cwd } = workspace()
  server = await startMockServer({ steps: steps as never })
  const timeout = join(home, '..', 'permission-timeout.patch.yml')
  writeFileSync(timeout, `- id: acp\n  config:\n    permissionTimeoutMs: ${permissionTimeoutMs}\n`)
  const p = await startAcp(
    { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
    cwd,
    ['--patch', GATE, '--patch', timeout],
  )
  running.push(p)
  await initialize(p.agent)
  const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })
  const prompt = async (text: string) =>
    (await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] })).stopReason
  return { p, s: server, cwd, prompt }
}

const failedCalls = (p: AcpProcess) =>
  p.updates.map((u) => u.update).filter((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'failed')

describe('dsh-acp permission requests fail closed', () => {
  it('a JSON-RPC error from the client rejects the call; an allow (positive control) runs it', async () => {
    const { p, s, cwd, prompt } = await setup(
      [writes('allowed.txt'), { text: 'done' }, writes('errored.txt'), { text: 'refused' }],
      0,
    )

    p.onPermission = () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } })
    expect(await prompt('one')).toBe('end_turn')
    expect(readFileSync(join(cwd, 'allowed.txt'), 'utf8')).toBe('ran\n')

    p.onPermission = () => {
      throw new acp.RequestError(-32603, 'the editor crashed while asking')
    }
    expect(await prompt('two')).toBe('end_turn')
    expect(p.permissions).toHaveLength(2)
    expect(existsSync(join(cwd, 'errored.txt'))).toBe(false)
    expect(toolText(s, 3)).toContain('not approved: the client did not answer the permission request')
    expect(toolText(s, 3)).toContain('the editor crashed while asking')
    expect(failedCalls(p)).toHaveLength(1)
    expect(await p.close()).toBe(0)
    assertOnlyFrames(p.stdoutLines())
  })

  it('a request the client never answers is rejected after permissionTimeoutMs; the turn goes on', async () => {
    const { p, s, cwd, prompt } = await setup([writes('unanswered.txt'), { text: 'gave up' }], 300)
    let asked!: () => void
    const wasAsked = new Promise<void>((resolve) => (asked = resolve))
    p.onPermission = () => {
      asked()
      // Never settles while the test looks; released in afterEach.
      return new Promise<acp.RequestPermissionResponse>((resolve) =>
        release.push(() => resolve({ outcome: { outcome: 'cancelled' } })),
      )
    }
    const stop = prompt('go')
    await wasAsked
    expect(await stop).toBe('end_turn')
    expect(existsSync(join(cwd, 'unanswered.txt'))).toBe(false)
    expect(s.requests).toHaveLength(2)
    expect(toolText(s, 1)).toContain(
      'not approved: the client did not answer the permission request (no answer within 300 ms)',
    )
    expect(failedCalls(p)).toHaveLength(1)
  })
})
