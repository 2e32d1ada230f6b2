// End-to-end: the real `dsh-jsonrpc-agent` bin (base bundle: jobs before tool-bash, tool-jobs),
// driven through @dsh/sdk-client; the model is @dsh/llm-mock-server. One session, two turns: a
// background sleep-then-print job started in the first is read in the second, then one is killed.
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { Harness } from '@dsh/sdk-client'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

let server: MockServer | undefined
let harness: Harness | undefined
afterEach(async () => {
  await harness?.close()
  await server?.close()
  harness = undefined
  server = undefined
})

const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })

function toolText(i: number, callId: string): string {
  const messages = (
    server!.requests[i].body as { messages: Array<{ role: string; content: string; tool_call_id?: string }> }
  ).messages
  return messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? '(none)'
}

it('a background job started in one turn is polled with job_output in the next; job_kill stops another', {
  timeout: 120_000,
}, async () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-jobs-e2e-')))
  const cwd = join(root, 'work')
  mkdirSync(cwd)
  server = await startMockServer({
    steps: [
      call('b1', 'bash', {
        command: 'sleep 1; echo slept-and-printed',
        description: 'sleep then print',
        run_in_background: true,
      }),
      call('o1', 'job_output', { id: 'bash-1' }),
      { text: 'started' },
      // Turn 2, after the job ended: its notice arrives with the turn's first request.
      { expect: { lastContains: 'what did it print' }, ...call('o2', 'job_output', { id: 'bash-1', since: 0 }) },
      call('b2', 'bash', { command: 'sleep 60', description: 'long sleep', run_in_background: true }),
      call('k2', 'job_kill', { id: 'bash-2' }),
      call('l2', 'job_list', {}),
      { text: 'done' },
    ] as never,
  })
  harness = await Harness.start({
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: root,
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'x',
    },
  })
  const session = await harness.createSession({ cwd })
  const first = await session.prompt('start a background job')
  expect(first).toMatchObject({ reason: 'completed', text: 'started' })
  expect(toolText(1, 'b1')).toMatch(/^Started background job bash-1 \(sleep then print\)/)
  expect(toolText(2, 'o1')).toMatch(/^Job bash-1 \(running\); output bytes 0-0, next: 0\.\n\(no new output\)$/)
  // The job keeps running after the turn; give it time to finish before the next turn.
  await new Promise((r) => setTimeout(r, 2500))
  const second = await session.prompt('what did it print?')
  expect(second).toMatchObject({ reason: 'completed', text: 'done' })
  const turn2 = (server.requests[3].body as { messages: Array<{ role: string; content: unknown }> }).messages
  expect(JSON.stringify(turn2)).toContain(
    '[Background job bash-1 (\\"sleep then print\\") exited with code 0; 18 bytes of output. Read it with job_output.]',
  )
  expect(toolText(4, 'o2')).toBe('Job bash-1 (exited with code 0); output bytes 0-18, next: 18.\nslept-and-printed\n')
  expect(toolText(6, 'k2')).toBe('Job bash-2 was stopped (killed).')
  expect(toolText(7, 'l2')).toMatch(
    /^2 background jobs:\nbash-1 {2}exited with code 0 {2}18 bytes .*\nbash-2 {2}killed {2}\d+ bytes {2}"long sleep"/,
  )
})
