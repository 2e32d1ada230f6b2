// Agent-level behaviour: a tool that asks for approval before acting, driven by a scripted model.
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { ToolOutput } from '@dsh/tools'
import ApprovalService, {
  describeOutcome,
  isAllowed,
  type ApprovalAnswerer,
  type ApprovalOutcome,
  type ApprovalRequest,
} from '../src/index.ts'

/** Records each action it performed; performs it only when approval allows. */
function deployTool(performed: string[]) {
  return {
    name: 'deploy-tool',
    inject: ['tools', 'approval'],
    apply(ctx: Context) {
      ctx.tools.register({
        name: 'deploy',
        description: 'deploys to a target after approval',
        parameters: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
        async execute(args: { target: string }, call): Promise<ToolOutput> {
          const outcome = await ctx.approval.request(
            {
              sessionId: call.sessionId,
              agentId: call.agentId,
              kind: 'command',
              title: `deploy ${args.target}`,
              action: { deploy: args.target },
            },
            { signal: call.signal },
          )
          const what = `deploying to ${args.target}`
          if (!isAllowed(outcome))
            return {
              content: describeOutcome(outcome, what),
              error: {
                code: 'APPROVAL_' + outcome.decision.toUpperCase(),
                message: outcome.reason ?? outcome.decision,
              },
            }
          performed.push(args.target)
          return { content: `deployed ${args.target}` }
        },
      })
    },
  }
}

function answererPlugin(answerer: ApprovalAnswerer) {
  return {
    name: `answerer-${answerer.name}`,
    inject: ['approval'],
    apply: (ctx: Context) => void ctx.approval.registerAnswerer(answerer),
  }
}

const deploy = (target: string) => ({ toolCalls: [{ name: 'deploy', arguments: { target } }] })

/** Text of the tool results the model saw in its last request. */
function toolResultsSeen(harness: Harness): string[] {
  const last = harness.model.requests.at(-1)!
  return last.messages
    .filter((m) => m.role === 'tool')
    .map((m) =>
      Array.isArray(m.content) ? m.content.map((b) => ('text' in b ? b.text : '')).join('') : String(m.content),
    )
}

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

describe('approval at the agent level', () => {
  it('allowed-once lets exactly one action through; the identical second request asks again', async () => {
    const performed: string[] = []
    const asked: ApprovalRequest[] = []
    harness = await createHarness({
      script: [deploy('prod'), deploy('prod'), { text: 'done' }],
      plugins: [
        [ApprovalService],
        [deployTool(performed)],
        [answererPlugin({ name: 'human', answer: (req) => (asked.push(req), { decision: 'allowed-once' }) })],
      ],
    })
    const result = await harness.prompt('deploy twice')
    expect(result.reason).toBe('completed')
    expect(asked).toHaveLength(2)
    expect(asked[0]!.id).not.toBe(asked[1]!.id)
    expect(asked[0]!.sessionId).toBe(harness.session.id)
    expect(performed).toEqual(['prod', 'prod'])
    expect(harness.ctx.approval.grants(harness.session.id)).toEqual([])
  })

  it('allowed-always is remembered for the same action only', async () => {
    const performed: string[] = []
    const asked: string[] = []
    harness = await createHarness({
      script: [deploy('prod'), deploy('prod'), deploy('staging'), { text: 'done' }],
      plugins: [
        [ApprovalService],
        [deployTool(performed)],
        [answererPlugin({ name: 'human', answer: (req) => (asked.push(req.title), { decision: 'allowed-always' }) })],
      ],
    })
    await harness.prompt('deploy')
    expect(performed).toEqual(['prod', 'prod', 'staging'])
    expect(asked).toEqual(['deploy prod', 'deploy staging']) // the second prod came from memory
    expect(harness.ctx.approval.grants(harness.session.id)).toEqual([
      { kind: 'command', action: { deploy: 'prod' } },
      { kind: 'command', action: { deploy: 'staging' } },
    ])
  })

  it('a rejection reaches the model as a refusal it can read, and the action is not performed', async () => {
    const performed: string[] = []
    harness = await createHarness({
      script: [deploy('prod'), { text: 'ok, I will not deploy' }],
      plugins: [
        [ApprovalService],
        [deployTool(performed)],
        [answererPlugin({ name: 'human', answer: () => ({ decision: 'rejected', message: 'not on a Friday' }) })],
      ],
    })
    const result = await harness.prompt('deploy')
    expect(result.text).toBe('ok, I will not deploy')
    expect(performed).toEqual([])
    const [seen] = toolResultsSeen(harness)
    expect(seen).toContain('Approval for deploying to prod was rejected; it was not done.')
    expect(seen).toContain('The user said: not on a Friday')
    const logged = harness.session.events.find((e) => e.type === 'tool/result')!.data as { error?: { code: string } }
    expect(logged.error?.code).toBe('APPROVAL_REJECTED')
  })

  it('fails closed when no answerer exists, when the answerer throws, and when its channel closes', async () => {
    const performed: string[] = []
    let closeChannel!: () => void
    harness = await createHarness({
      script: [deploy('a'), deploy('b'), deploy('c'), { text: 'done' }],
      plugins: [[ApprovalService], [deployTool(performed)]],
    })
    const outcomes: ApprovalOutcome[] = []
    harness.ctx.on('approval/resolved', (_req, outcome) => {
      outcomes.push(outcome)
    })
    let step = 0
    const unanswered = new Promise<void>(() => {})
    harness.ctx.on('approval/requested', () => {
      step++
      if (step === 2) {
        // A throwing answerer for the second request.
        const dispose = harness!.ctx.approval.registerAnswerer({
          name: 'broken',
          answer: () => {
            throw new Error('socket reset')
          },
        })
        setTimeout(dispose, 0)
      }
    })
    harness.ctx.on(
      'approval/requested',
      (req) => {
        if (req.title === 'deploy c') {
          // A channel that never answers and then disconnects.
          queueMicrotask(() => closeChannel())
        }
      },
      { prepend: true },
    )
    // Registered before 'deploy c' is requested: simulate with a hook on the second resolution.
    harness.ctx.on('approval/resolved', (req) => {
      if (req.title === 'deploy b') {
        closeChannel = harness!.ctx.approval.registerAnswerer({
          name: 'acp-client',
          answer: () => unanswered.then(() => ({ decision: 'allowed-once' as const })),
        })
      }
    })
    await harness.prompt('deploy three')
    expect(performed).toEqual([])
    expect(outcomes.map((o) => o.decision)).toEqual(['unavailable', 'unavailable', 'unavailable'])
    expect(outcomes[0]!.reason).toMatch(/no approval answerer/)
    expect(outcomes[1]!.reason).toMatch(/"broken" failed: socket reset/)
    expect(outcomes[2]!.reason).toMatch(/"acp-client" went away/)
    expect(toolResultsSeen(harness).every((t) => t.includes('could not be obtained'))).toBe(true)
    expect(harness.ctx.approval.pending()).toEqual([])
  })

  it('an approval pending when the turn is cancelled resolves as cancelled', async () => {
    const performed: string[] = []
    let answererSignal: AbortSignal | undefined
    harness = await createHarness({
      script: [deploy('prod'), { text: 'never reached' }],
      plugins: [
        [ApprovalService],
        [deployTool(performed)],
        [
          answererPlugin({
            name: 'slow-human',
            answer: (_req, { signal }) => ((answererSignal = signal), new Promise(() => {})),
          }),
        ],
      ],
    })
    const resolved = new Promise<ApprovalOutcome>((resolve) =>
      harness!.ctx.on('approval/resolved', (_r, o) => resolve(o)),
    )
    harness.ctx.on('approval/requested', () => {
      expect(harness!.ctx.approval.pending()).toHaveLength(1)
      setTimeout(() => harness!.agent.abort('user pressed stop'), 0)
    })
    const result = await harness.prompt('deploy')
    expect(result.reason).toBe('cancelled')
    const outcome = await resolved
    expect(outcome.decision).toBe('cancelled')
    expect(answererSignal?.aborted).toBe(true) // the channel is told to withdraw its prompt
    expect(performed).toEqual([])
    expect(harness.ctx.approval.pending()).toEqual([])
  })
})
