// bash run_in_background + job_output / job_list / job_kill through the real loop, the real
// bash-local executor and real processes; the job survives its turn and its end is a notice.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import type { LlmRequest } from '@dsh/llm'
import JobRegistry from '@dsh/jobs'
import LocalSubprocessService from '@dsh/subprocess-local'
import BashLocalExecutor from '@dsh/bash-local'
import * as ToolBash from '@dsh/tool-bash'
import * as ToolJobs from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function boot(script: ScriptEntry[], jobs: object = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-tool-jobs-'))
  harness = await createHarness({
    cwd: dir,
    script,
    plugins: [
      [JobRegistry, jobs],
      [LocalSubprocessService, {}],
      [
        BashLocalExecutor,
        { defaultTimeoutMs: 5_000, maxTimeoutMs: 60_000, killGraceMs: 200, spillDir: join(dir, '.spill') },
      ],
      [ToolBash, {}],
      [ToolJobs, {}],
    ],
  })
  return harness
}

const call = (name: string, args: object, callId: string) => ({ toolCalls: [{ name, arguments: args, callId }] })

function lastTool(request: LlmRequest): string {
  const m = request.messages.filter((x) => x.role === 'tool').at(-1)
  return m && m.role === 'tool' ? m.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : ''
}
function lastUser(request: LlmRequest): string {
  const m = request.messages.filter((x) => x.role === 'user').at(-1)
  if (m?.role !== 'user') return ''
  return typeof m.content === 'string' ? m.content : m.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
}

describe('tool-jobs with bash run_in_background', () => {
  it('a sleep-then-print job outlives its turn; job_output reads it in the next turn; its end is a notice', {
    timeout: 30_000,
  }, async () => {
    const h = await boot([
      call(
        'bash',
        {
          command: 'echo started; sleep 0.5; echo finished-sleeping',
          description: 'sleep then print',
          run_in_background: true,
        },
        'c1',
      ),
      call('job_output', { id: 'bash-1' }, 'c2'),
      { text: 'started it' },
      // turn 2
      call('job_output', { id: 'bash-1', since: 0 }, 'c3'),
      call('job_list', {}, 'c4'),
      { text: 'read it' },
    ])
    const bash = h.ctx.tools.schemas(h.agent.scope).find((t) => t.name === 'bash')!
    expect(Object.keys((bash.parameters as { properties: object }).properties)).toContain('run_in_background')
    const first = await h.prompt('start a job')
    expect(first.text).toBe('started it')
    expect(lastTool(h.model.requests[1])).toBe(
      'Started background job bash-1 (sleep then print); it runs until it ends, you stop it with job_kill, or its 60000 ms limit. Read its output with job_output {"id": "bash-1"}.',
    )
    expect(lastTool(h.model.requests[2])).toMatch(/^Job bash-1 \(running\); output bytes 0-\d+, next: \d+\.\n/)
    // The turn is over and the job still runs; wait for its end.
    expect(h.ctx.jobs.get('bash-1').status).toBe('running')
    expect(await h.ctx.jobs.wait('bash-1')).toMatchObject({ status: 'exited', exitCode: 0 })
    const second = await h.prompt('what did it print?')
    expect(second.text).toBe('read it')
    // The notice was queued while the agent was idle and rode along with the next turn's first request.
    const turn2 = h.model.requests[3]
    const users = turn2.messages
      .filter((m) => m.role === 'user')
      .map((m) =>
        m.role === 'user' && typeof m.content !== 'string'
          ? m.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
          : '',
      )
    expect(users.at(-2)).toBe(
      '[Background job bash-1 ("sleep then print") exited with code 0; 26 bytes of output. Read it with job_output.]',
    )
    expect(lastUser(turn2)).toBe('what did it print?')
    expect(lastTool(h.model.requests[4])).toBe(
      'Job bash-1 (exited with code 0); output bytes 0-26, next: 26.\nstarted\nfinished-sleeping\n',
    )
    expect(lastTool(h.model.requests[5])).toBe(
      '1 background job:\nbash-1  exited with code 0  26 bytes  "sleep then print"  $ "echo started; sleep 0.5; echo finished-sleeping"',
    )
  })

  it('job_kill stops a running job; bad ids and arguments are one error each', { timeout: 30_000 }, async () => {
    const h = await boot([
      call('bash', { command: 'sleep 30', description: 'long sleep', run_in_background: true }, 'c1'),
      call('job_kill', { id: 'bash-1' }, 'c2'),
      call('job_kill', { id: 'bash-1' }, 'c3'),
      call('job_output', { id: 'bash-9' }, 'c4'),
      call('job_output', { id: 'bash-1', since: -5 }, 'c5'),
      call('job_kill', {}, 'c6'),
      { text: 'done' },
    ])
    const result = await h.prompt('start and kill')
    expect(result.text).toBe('done')
    const seen = (i: number) => lastTool(h.model.requests[i])
    expect(seen(2)).toBe('Job bash-1 was stopped (killed).')
    expect(seen(3)).toBe('Job bash-1 had already ended (killed).')
    expect(seen(4)).toBe('Error [UNKNOWN_JOB]: no background job "bash-9" (known: bash-1)')
    expect(seen(5)).toMatch(/^Error \[INVALID_ARGUMENTS\]/)
    expect(seen(6)).toMatch(/^Error \[INVALID_ARGUMENTS\]/)
  })

  it("job_output says when the session's spill cap cut the spill file, and where the rest is not", {
    timeout: 30_000,
  }, async () => {
    const h = await boot(
      [
        call(
          'bash',
          { command: "head -c 5000 /dev/zero | tr '\\0' x", description: 'long', run_in_background: true },
          'c1',
        ),
        { text: 'started' },
        call('job_output', { id: 'bash-1', since: 0 }, 'c2'),
        { text: 'read' },
      ],
      { retainBytes: 1024, spillMaxBytes: 2000 },
    )
    await h.prompt('start')
    expect(await h.ctx.jobs.wait('bash-1')).toMatchObject({ status: 'exited', outputBytes: 5000 })
    await h.prompt('read it')
    const text = lastTool(h.model.requests[3])
    expect(text).toMatch(
      /^Job bash-1 \(exited with code 0\); output bytes 3976-5000, next: 5000; 3976 earlier bytes are no longer in memory; the spilled output is in \/\S+\/bash-1\.log; the session's spill cap \(2000 bytes\) was reached: the spill file ends after 2000 bytes\.\nx{1024}$/,
    )
  })

  it('app stop kills running jobs', { timeout: 30_000 }, async () => {
    const h = await boot([
      call('bash', { command: 'sleep 30', description: 'forever', run_in_background: true }, 'c1'),
      { text: 'ok' },
    ])
    await h.prompt('start')
    await h.ctx.parallel('app/stopping' as never, {} as never)
    expect(h.ctx.jobs.get('bash-1').status).toBe('killed')
  })
})
