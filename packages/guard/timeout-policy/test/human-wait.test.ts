// The deadline does not count time a call spends waiting for a person: an approval or a question
// asked inside the call (named by its callId) pauses it, and it resumes with what was left.
import { describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import ApprovalService, { type ApprovalRequest } from '@dsh/user-approval'
import UserQuestionsService, { type QuestionsRequest } from '@dsh/user-questions'
import type { ToolCallContext } from '@dsh/tools'
import * as TimeoutPolicy from '../src/index.ts'

// Generous against a loaded runner: the work inside a call is 40 ms, the person takes BUDGET + 250.
// 400 ms was not enough: on two cores at load 12-16 a Code Mode call's own work (40 ms of sleeps
// plus the nested dispatch) overran it once in a full run. 1.5 s leaves 1.4 s of scheduling noise.
const BUDGET = 1500

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Sleeps `ms`, or until the call's signal aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
  })
}

/**
 * `guarded` sleeps `before` ms, asks ctx.approval (naming its call unless `anonymous`), then sleeps
 * `after` ms and answers with its own result. `asker` does the same with a user question. `outer`
 * runs `guarded` as a Code Mode call of its own (origin `code`, parentCallId).
 */
function tools(ranLog: string[]) {
  return {
    name: 'human-wait-tools',
    inject: ['tools', 'approval', 'userQuestions'],
    apply(ctx: Context) {
      type Args = { before: number; after: number; anonymous?: boolean }
      const parameters = {
        type: 'object',
        properties: { before: { type: 'integer' }, after: { type: 'integer' }, anonymous: { type: 'boolean' } },
        required: ['before', 'after'],
      }
      const guarded = async (args: Args, call: ToolCallContext) => {
        await sleep(args.before, call.signal)
        const outcome = await ctx.approval.request(
          {
            ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
            ...(args.anonymous ? {} : { callId: call.callId }),
            kind: 'command',
            title: 'run it',
            action: { n: 1 },
          },
          { signal: call.signal },
        )
        if (call.signal.aborted) return { content: 'stopped' }
        await sleep(args.after, call.signal)
        if (call.signal.aborted) return { content: 'stopped' }
        ranLog.push(call.callId)
        return { content: `ran after ${outcome.decision}` }
      }
      ctx.tools.register<Args>({ name: 'guarded', description: 'asks approval', parameters, execute: guarded })
      ctx.tools.register<Args>({
        name: 'asker',
        description: 'asks a question',
        parameters,
        async execute(args, call) {
          await sleep(args.before, call.signal)
          const outcome = await ctx.userQuestions.ask(
            [{ id: 'q', header: 'Q', question: 'which?', options: [{ label: 'a' }, { label: 'b' }] }],
            {
              ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
              callId: call.callId,
              signal: call.signal,
            },
          )
          await sleep(args.after, call.signal)
          if (call.signal.aborted) return { content: 'stopped' }
          return { content: `answered ${outcome.status}` }
        },
      })
      ctx.tools.register<Args>({
        name: 'outer',
        description: 'runs guarded as a program call',
        parameters,
        async execute(args, call) {
          const inner = await ctx.tools.execute(
            { callId: `${call.callId}.0`, name: 'guarded', arguments: JSON.stringify(args) },
            {
              ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
              cwd: call.cwd,
              signal: call.signal,
              origin: 'code',
              parentCallId: call.callId,
            },
          )
          return { content: `inner: ${inner.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')}` }
        },
      })
    },
  }
}

/**
 * Boots the loop with the real approval and questions services, an answerer that decides only
 * after it saw the request and then waited `delay` ms (the human's thinking time), and the policy
 * with a BUDGET ms deadline on every test tool.
 */
async function boot(calls: Array<{ name: string; args: Record<string, unknown> }>, delay: number) {
  const ran: string[] = []
  const harness = await createHarness({
    script: [{ toolCalls: calls.map((c) => ({ name: c.name, arguments: c.args })) }, { text: 'done' }],
    plugins: [
      [ApprovalService],
      [UserQuestionsService],
      [tools(ran)],
      [TimeoutPolicy, { perTool: { guarded: BUDGET, asker: BUDGET, outer: BUDGET } }],
    ],
  })
  try {
    return await run(harness, ran, delay)
  } finally {
    await harness.dispose()
  }
}

async function run(harness: Harness, ran: string[], delay: number) {
  const asked: Array<ApprovalRequest | QuestionsRequest> = []
  harness.ctx.approval.registerAnswerer({
    name: 'slow-human',
    async answer(request) {
      asked.push(request)
      await pause(delay)
      return { decision: 'allowed-once' }
    },
  })
  harness.ctx.userQuestions.registerAnswerer({
    name: 'slow-human',
    async answer(request) {
      asked.push(request)
      await pause(delay)
      return { q: { selected: ['a'] } }
    },
  })
  await harness.prompt('go')
  const results = harness.session.events
    .filter((e) => e.type === 'tool/result')
    .map((e) => e.data as { message: { content: { text: string }[] }; error?: { code: string } })
  return { results, ran, asked }
}

const text = (r: { message: { content: { text: string }[] } }) => r.message.content[0]!.text

// Each case waits ~1.5-2 s of wall time on timers and almost no CPU: they run side by side, each
// with its own harness, so the file takes about the longest case instead of their sum (11.5 s).
describe.concurrent('timeout-policy: time waiting for a person does not count', () => {
  it('an approval answered after the budget lets the call run and return its own result', async () => {
    const { results, ran, asked } = await boot([{ name: 'guarded', args: { before: 20, after: 20 } }], BUDGET + 250)
    expect(asked).toHaveLength(1)
    expect((asked[0] as ApprovalRequest).callId).toBeTruthy()
    expect(results[0]!.error).toBeUndefined()
    expect(text(results[0]!)).toBe('ran after allowed-once')
    expect(ran).toHaveLength(1)
  })

  it('a question answered after the budget lets the call finish too', async () => {
    const { results } = await boot([{ name: 'asker', args: { before: 20, after: 20 } }], BUDGET + 250)
    expect(results[0]!.error).toBeUndefined()
    expect(text(results[0]!)).toBe('answered answered')
  })

  it('the budget resumes with what was left: time before and after the wait still adds up', async () => {
    // 900 ms before + 900 ms after the (long) wait exceed the 1.5 s budget: a resume that restarted
    // the whole budget would let it through.
    const { results, ran } = await boot([{ name: 'guarded', args: { before: 900, after: 900 } }], BUDGET + 100)
    expect(results[0]!.error?.code).toBe('TOOL_TIMEOUT')
    expect(ran).toEqual([])
  })

  it('positive control: work after the approval that exceeds the budget still times out', async () => {
    const { results, ran } = await boot([{ name: 'guarded', args: { before: 0, after: 60_000 } }], 10)
    expect(results[0]!.error?.code).toBe('TOOL_TIMEOUT')
    expect(ran).toEqual([])
  })

  it('a request that names no call does not pause anything', async () => {
    const { results, ran } = await boot(
      [{ name: 'guarded', args: { before: 0, after: 0, anonymous: true } }],
      BUDGET + 250,
    )
    expect(results[0]!.error?.code).toBe('TOOL_TIMEOUT')
    expect(ran).toEqual([])
  })

  it("a Code Mode call's wait pauses its entry call's deadline as well", async () => {
    const { results, ran } = await boot([{ name: 'outer', args: { before: 20, after: 20 } }], BUDGET + 250)
    expect(results[0]!.error).toBeUndefined()
    expect(text(results[0]!)).toBe('inner: ran after allowed-once')
    expect(ran).toHaveLength(1)
  })
})
