// End-to-end: a bash call's deadline (timeout-policy, set to 1.5 s by a patch) does not run while
// the editor's person decides a sandbox escalation. The real `dsh` launcher (`dsh acp`), the ACP
// SDK's client side, and the DeepSeek adapter against @dsh/llm-mock-server.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { assertOnlyFrames, initialize, startAcp, workspace, type AcpProcess } from '@dsh/cli-testkit/acp'

const BUDGET_MS = 1500
const DSH = fileURLToPath(new URL('../../../boot/cli/bin/dsh.mjs', import.meta.url))

let server: MockServer | undefined
let running: AcpProcess | undefined
afterEach(async () => {
  if (running && running.child.exitCode === null) running.child.kill('SIGKILL')
  running = undefined
  await server?.close()
  server = undefined
})

const toolText = (s: MockServer, i: number) => {
  const messages = (s.requests[i]!.body as { messages: { role: string; content: string }[] }).messages
  return messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
}

const escalated = (command: string) => ({
  toolCalls: [
    {
      name: 'bash',
      arguments: { command, description: 'run it', sandbox_escalation: { justification: 'needs to run unconfined' } },
    },
  ],
})

it('a person slower than the bash budget still gets the command run; a command past the budget still times out', async () => {
  const { home, cwd } = workspace()
  server = await startMockServer({
    steps: [escalated('echo ran-after-slow-approval'), { text: 'ok' }, escalated('sleep 8'), { text: 'ok' }] as never,
  })
  const patch = join(cwd, 'small-bash-budget.patch.yml')
  writeFileSync(patch, `- id: timeout-policy\n  config:\n    perTool:\n      bash: ${BUDGET_MS}\n`)
  const p = await startAcp(
    { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
    cwd,
    ['acp', '--patch', patch],
    DSH,
  )
  running = p
  await initialize(p.agent)
  const { sessionId } = await p.agent.request('session/new', { cwd, mcpServers: [] })

  // The person answers only once the request is on screen, and takes longer than the whole budget.
  let askedAt = 0
  p.onPermission = async () => {
    askedAt = performance.now()
    await new Promise((resolve) => setTimeout(resolve, BUDGET_MS + 500))
    return { outcome: { outcome: 'selected', optionId: 'allow_once' } }
  }
  const first = await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'one' }] })
  expect(first.stopReason).toBe('end_turn')
  expect(p.permissions).toHaveLength(1)
  expect(askedAt).toBeGreaterThan(0)
  const answer = toolText(server, 1)
  expect(answer).not.toContain('TOOL_TIMEOUT')
  expect(answer).toContain('ran-after-slow-approval')

  // Positive control: approved at once, the command itself outlives the budget and is stopped.
  p.onPermission = () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } })
  const second = await p.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'two' }] })
  expect(second.stopReason).toBe('end_turn')
  expect(p.permissions).toHaveLength(2)
  expect(toolText(server, 3)).toContain('Error [TOOL_TIMEOUT]: tool "bash" did not finish within its 1.5 s time limit')

  expect(await p.close()).toBe(0)
  assertOnlyFrames(p.stdoutLines())
}, 60_000)
