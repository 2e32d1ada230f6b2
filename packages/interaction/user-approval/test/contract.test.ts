// The edges of ctx.approval's contract that mutation testing (`pnpm mutation user-approval`) showed
// no other test pinned: each malformed request field, the shape of the minted request, forgetting
// grants, the pending filter, what an answerer's reason and message become, and the model-facing
// sentences of describeOutcome.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import ApprovalService, {
  APPROVAL_CHOICES,
  APPROVAL_DECISIONS,
  describeOutcome,
  policyAnswerer,
  type ApprovalRequest,
  type ApprovalRequestInput,
} from '../src/index.ts'

let ctx: Context
beforeEach(async () => {
  ctx = new Context()
  await ctx.plugin(ApprovalService)
})
afterEach(async () => {
  await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
})

const req = (extra: Record<string, unknown> = {}): ApprovalRequestInput =>
  ({ sessionId: 's1', kind: 'command', title: 't', action: { argv: ['ls'] }, ...extra }) as ApprovalRequestInput

describe('ctx.approval request validation', () => {
  it('refuses each malformed field with a message naming it, before any answerer is asked', async () => {
    let asked = 0
    ctx.approval.registerAnswerer({ name: 'h', answer: () => (asked++, { decision: 'allowed-once' }) })
    const bad: Array<[unknown, RegExp]> = [
      [null, /^approval\.request: expected a request object$/],
      ['command', /^approval\.request: expected a request object$/],
      [req({ kind: '' }), /^approval\.request: kind must be a non-empty string$/],
      [req({ kind: 7 }), /^approval\.request: kind must be a non-empty string$/],
      [req({ title: 7 }), /^approval\.request: title must be a non-empty string$/],
      [req({ detail: 7 }), /^approval\.request: detail must be a string$/],
      [req({ callId: '' }), /^approval\.request: callId must be a non-empty string$/],
      [req({ callId: 7 }), /^approval\.request: callId must be a non-empty string$/],
      [req({ action: { n: 1n } }), /^approval\.request: action must be JSON$/],
      [req({ options: [] }), /^approval\.request: options must be a non-empty array$/],
      [req({ options: 'allowed-once' }), /^approval\.request: options must be a non-empty array$/],
      [
        req({ options: ['allowed-once', 'maybe'] }),
        /^approval\.request: unknown option "maybe" \(valid: allowed-once, allowed-always, rejected\)$/,
      ],
    ]
    for (const [input, message] of bad) {
      await expect(ctx.approval.request(input as ApprovalRequestInput), String(message)).rejects.toThrow(message)
    }
    expect(asked).toBe(0)
    // The well-formed neighbours of those cases are accepted.
    expect((await ctx.approval.request(req({ detail: 'why', options: ['allowed-once'] }))).decision).toBe(
      'allowed-once',
    )
    expect(asked).toBe(1)
  })
})

describe('the minted request', () => {
  it('carries sessionId, agentId, callId and detail only when given, and the options offered', async () => {
    const seen: ApprovalRequest[] = []
    ctx.on('approval/requested', (r: ApprovalRequest) => void seen.push(r))
    ctx.approval.registerAnswerer({ name: 'h', answer: () => ({ decision: 'rejected' }) })
    await ctx.approval.request(
      req({ agentId: 'a1', callId: 'call-1', detail: 'd', options: ['allowed-once', 'rejected'] }),
    )
    await ctx.approval.request({ kind: 'write', title: 'w', action: 1 })
    expect(seen[0]).toMatchObject({
      sessionId: 's1',
      agentId: 'a1',
      callId: 'call-1',
      kind: 'command',
      title: 't',
      detail: 'd',
      action: { argv: ['ls'] },
      options: ['allowed-once', 'rejected'],
    })
    expect(Object.keys(seen[1]!).sort()).toEqual(['action', 'id', 'kind', 'options', 'time', 'title'])
    expect(seen[1]!.options).toEqual(APPROVAL_CHOICES)
  })

  it("pending() lists one session's waiting requests when asked for a session", async () => {
    const answers: Array<() => void> = []
    ctx.approval.registerAnswerer({
      name: 'h',
      answer: () => new Promise((resolve) => answers.push(() => resolve({ decision: 'rejected' }))),
    })
    const waiting = [
      ctx.approval.request(req({ title: 'one' })),
      ctx.approval.request(req({ sessionId: 's2', title: 'two' })),
    ]
    await expect.poll(() => answers.length).toBe(2)
    expect(ctx.approval.pending({ sessionId: 's1' }).map((r) => r.title)).toEqual(['one'])
    expect(ctx.approval.pending({ sessionId: 's2' }).map((r) => r.title)).toEqual(['two'])
    expect(ctx.approval.pending({ sessionId: 's3' })).toEqual([])
    expect(ctx.approval.pending().map((r) => r.title)).toEqual(['one', 'two'])
    for (const answer of answers) answer()
    await Promise.all(waiting)
    expect(ctx.approval.pending()).toEqual([])
  })
})

describe('forgetting grants', () => {
  it("forget(session) drops only that session's grants; forget() drops every session's", async () => {
    let asked = 0
    ctx.approval.registerAnswerer({ name: 'h', answer: () => (asked++, { decision: 'allowed-always' }) })
    for (const sessionId of ['s1', 's2', 's3']) await ctx.approval.request(req({ sessionId }))
    expect(asked).toBe(3)
    ctx.approval.forget('s1')
    expect(ctx.approval.grants('s1')).toEqual([])
    expect(ctx.approval.grants('s2')).toEqual([{ kind: 'command', action: { argv: ['ls'] } }])
    await ctx.approval.request(req({ sessionId: 's2' }))
    expect(asked).toBe(3) // still remembered
    ctx.approval.forget()
    expect(ctx.approval.grants('s2')).toEqual([])
    expect(ctx.approval.grants('s3')).toEqual([])
    await ctx.approval.request(req({ sessionId: 's3' }))
    expect(asked).toBe(4) // asked again
  })
})

describe('what an answer becomes', () => {
  it('keeps a non-empty string reason and message, and drops anything else', async () => {
    let answer: unknown
    ctx.approval.registerAnswerer({ name: 'h', answer: () => answer as never })
    answer = { decision: 'rejected', reason: 'too risky', message: 'use a branch' }
    expect(await ctx.approval.request(req())).toEqual({
      decision: 'rejected',
      answeredBy: 'h',
      reason: 'too risky',
      message: 'use a branch',
    })
    answer = { decision: 'rejected', reason: '', message: '' }
    expect(await ctx.approval.request(req())).toEqual({ decision: 'rejected', answeredBy: 'h' })
    answer = { decision: 'rejected', reason: 42, message: { text: 'x' } }
    expect(await ctx.approval.request(req())).toEqual({ decision: 'rejected', answeredBy: 'h' })
  })

  it('a missing or non-object answer is reported as an invalid answer, not as a failure', async () => {
    let answer: unknown
    ctx.approval.registerAnswerer({ name: 'h', answer: () => answer as never })
    for (answer of [null, undefined, 'allowed-once', { decision: 3 }]) {
      const outcome = await ctx.approval.request(req())
      expect(outcome.decision).toBe('unavailable')
      expect(outcome.reason).toMatch(/^approval answerer "h" returned an invalid answer/)
    }
  })

  it('a remembered grant says so', async () => {
    ctx.approval.registerAnswerer({ name: 'h', answer: () => ({ decision: 'allowed-always' }) })
    await ctx.approval.request(req())
    expect(await ctx.approval.request(req())).toEqual({
      decision: 'allowed-always',
      reason: 'remembered for this session',
      answeredBy: 'memory',
    })
  })

  it('an abort before asking names its reason', async () => {
    ctx.approval.registerAnswerer({ name: 'h', answer: () => ({ decision: 'allowed-once' }) })
    const early = new AbortController()
    early.abort(new Error('turn ended'))
    expect(await ctx.approval.request(req(), { signal: early.signal })).toEqual({
      decision: 'cancelled',
      reason: 'cancelled before it was asked (turn ended)',
    })
  })
})

describe('policyAnswerer details', () => {
  it('reject names its policy, not a missing approver; an empty hint leaves no trailing space', async () => {
    let policy: 'reject' | 'ask' = 'reject'
    ctx.approval.registerAnswerer(policyAnswerer(() => policy, { hint: '' }))
    const rejected = await ctx.approval.request(req())
    expect(rejected).toMatchObject({
      decision: 'rejected',
      reason: 'approval policy "reject": actions that need approval are refused in this run',
    })
    policy = 'ask'
    expect((await ctx.approval.request(req())).reason).toBe(
      'approval policy "ask" needs a human, but this run has no interactive approver.',
    )
  })

  it('never explains itself; an unknown policy lists the valid ones', async () => {
    let policy = 'never'
    ctx.approval.registerAnswerer(policyAnswerer(() => policy as never))
    expect((await ctx.approval.request(req())).reason).toBe(
      'approval policy "never": actions are allowed without asking',
    )
    expect((await ctx.approval.request(req({ options: ['rejected'] }))).reason).toMatch(
      /^approval policy "never" allows only once/,
    )
    policy = 'sometimes'
    expect((await ctx.approval.request(req())).reason).toBe(
      'approval answerer "policy" failed: unknown approval policy "sometimes" (valid: ask, on-failure, never, reject)',
    )
  })

  it('accepts restricts the policy to the requests it takes', async () => {
    ctx.approval.registerAnswerer(policyAnswerer('never', { accepts: (r) => r.sessionId === 's1' }))
    expect((await ctx.approval.request(req())).decision).toBe('allowed-once')
    expect((await ctx.approval.request(req({ sessionId: 's9' }))).decision).toBe('unavailable')
  })
})

describe('describeOutcome', () => {
  const what = 'running `make`'
  it("gives the model one sentence per decision, with the reason and the user's words where they apply", () => {
    expect(describeOutcome({ decision: 'allowed-once' }, what)).toBe('The user approved running `make` once.')
    expect(describeOutcome({ decision: 'allowed-once', message: 'go' }, what)).toBe(
      'The user approved running `make` once. The user said: go',
    )
    expect(describeOutcome({ decision: 'allowed-always', reason: 'r' }, what)).toBe(
      'The user approved running `make` for the rest of this session.',
    )
    expect(describeOutcome({ decision: 'rejected', reason: 'no', message: 'never' }, what)).toBe(
      'Approval for running `make` was rejected; it was not done. Do not retry the same action; choose another approach or ask the user. Reason: no The user said: never',
    )
    expect(describeOutcome({ decision: 'rejected' }, what)).toBe(
      'Approval for running `make` was rejected; it was not done. Do not retry the same action; choose another approach or ask the user.',
    )
    expect(describeOutcome({ decision: 'cancelled', reason: 'turn ended', message: 'x' }, what)).toBe(
      'Approval for running `make` was cancelled; it was not done. Reason: turn ended',
    )
    expect(describeOutcome({ decision: 'cancelled' }, what)).toBe(
      'Approval for running `make` was cancelled; it was not done.',
    )
    expect(describeOutcome({ decision: 'unavailable' }, what)).toBe(
      'Approval for running `make` could not be obtained (nobody is available to approve); it was not done.',
    )
  })

  it('APPROVAL_DECISIONS lists every decision an outcome can carry', () => {
    expect([...APPROVAL_DECISIONS].sort()).toEqual([
      'allowed-always',
      'allowed-once',
      'cancelled',
      'rejected',
      'unavailable',
    ])
  })
})

describe('noHuman: refused because nobody could be asked', () => {
  it('ask/on-failure without a person and no answerer at all carry noHuman; reject and a real answer do not', async () => {
    let policy: 'reject' | 'ask' | 'on-failure' = 'ask'
    const off = ctx.approval.registerAnswerer(policyAnswerer(() => policy))
    expect(await ctx.approval.request(req())).toMatchObject({ decision: 'rejected', noHuman: true })
    policy = 'on-failure'
    expect(await ctx.approval.request(req())).toMatchObject({ decision: 'rejected', noHuman: true })
    policy = 'reject'
    expect((await ctx.approval.request(req())).noHuman).toBeUndefined()
    off()
    expect(await ctx.approval.request(req())).toMatchObject({ decision: 'unavailable', noHuman: true })
    const human = ctx.approval.registerAnswerer({ name: 'human', answer: () => ({ decision: 'rejected' }) })
    const refused = await ctx.approval.request(req())
    expect(refused.noHuman).toBeUndefined()
    expect(describeOutcome(refused, 'running `x`')).toMatch(/^Approval for running `x` was rejected/)
    human()
    policy = 'ask'
    const stand = ctx.approval.registerAnswerer(policyAnswerer(() => policy))
    const nobody = await ctx.approval.request(req())
    expect(describeOutcome(nobody, 'running `x`')).toMatch(/^Approval for running `x` was refused \(no one to ask\)/)
    stand()
  })
})
