import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import ApprovalService, {
  canonicalJson,
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

const req = (action: unknown, extra: Partial<ApprovalRequestInput> = {}): ApprovalRequestInput =>
  ({ sessionId: 's1', kind: 'command', title: 't', action, ...extra }) as ApprovalRequestInput

describe('ctx.approval', () => {
  it('grants match the kind and the action regardless of key order, within one session', async () => {
    let asked = 0
    ctx.approval.registerAnswerer({ name: 'h', answer: () => (asked++, { decision: 'allowed-always' }) })
    expect((await ctx.approval.request(req({ argv: ['rm', 'x'], cwd: '/w' }))).decision).toBe('allowed-always')
    const again = await ctx.approval.request(req({ cwd: '/w', argv: ['rm', 'x'] }))
    expect(again).toMatchObject({ decision: 'allowed-always', answeredBy: 'memory' })
    expect(asked).toBe(1)
    await ctx.approval.request(req({ cwd: '/w', argv: ['rm', 'y'] })) // other action
    await ctx.approval.request(req({ cwd: '/w', argv: ['rm', 'x'] }, { kind: 'write' })) // other kind
    await ctx.approval.request(req({ cwd: '/w', argv: ['rm', 'x'] }, { sessionId: 's2' })) // other session
    await ctx.approval.request(req({ cwd: '/w', argv: ['rm', 'x'] }, { sessionId: undefined })) // no session: never remembered
    await ctx.approval.request(req({ cwd: '/w', argv: ['rm', 'x'] }, { sessionId: undefined }))
    expect(asked).toBe(6)
    ctx.approval.forget('s1')
    await ctx.approval.request(req({ argv: ['rm', 'x'], cwd: '/w' }))
    expect(asked).toBe(7)
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[1,{"c":2,"d":1}]}')
  })

  it('grants are forgotten when the session is deleted', async () => {
    ctx.approval.registerAnswerer({ name: 'h', answer: () => ({ decision: 'allowed-always' }) })
    await ctx.approval.request(req(1))
    expect(ctx.approval.grants('s1')).toHaveLength(1)
    ctx.emit('session/deleted' as never, { id: 's1' } as never)
    expect(ctx.approval.grants('s1')).toEqual([])
  })

  it('rememberAlways: false makes allowed-always act once', async () => {
    const local = new Context()
    await local.plugin(ApprovalService, { rememberAlways: false } as never)
    let asked = 0
    local.approval.registerAnswerer({ name: 'h', answer: () => (asked++, { decision: 'allowed-always' }) })
    await local.approval.request(req(1))
    await local.approval.request(req(1))
    expect(asked).toBe(2)
  })

  it('an answer the request did not offer is rejected; a malformed answer is unavailable', async () => {
    let answer: unknown = { decision: 'allowed-always' }
    ctx.approval.registerAnswerer({ name: 'h', answer: () => answer as never })
    const once = await ctx.approval.request(req(1, { options: ['allowed-once', 'rejected'] }))
    expect(once.decision).toBe('rejected')
    expect(once.reason).toMatch(/did not offer/)
    expect(ctx.approval.grants('s1')).toEqual([])
    answer = { decision: 'yes' }
    expect((await ctx.approval.request(req(1))).decision).toBe('unavailable')
    answer = undefined
    expect((await ctx.approval.request(req(1))).decision).toBe('unavailable')
    answer = { decision: 'cancelled' } // not an answerer choice
    expect((await ctx.approval.request(req(1))).decision).toBe('unavailable')
  })

  it('routes to the newest answerer that accepts; a throwing accepts() fails closed', async () => {
    ctx.approval.registerAnswerer({ name: 'fallback', answer: () => ({ decision: 'rejected' }) })
    const off = ctx.approval.registerAnswerer({
      name: 'acp',
      accepts: (r) => r.sessionId === 's1',
      answer: () => ({ decision: 'allowed-once' }),
    })
    expect(ctx.approval.answerers()).toEqual(['acp', 'fallback'])
    expect((await ctx.approval.request(req(1))).answeredBy).toBe('acp')
    expect((await ctx.approval.request(req(1, { sessionId: 's9' }))).answeredBy).toBe('fallback')
    off()
    expect((await ctx.approval.request(req(1))).answeredBy).toBe('fallback')
    ctx.approval.registerAnswerer({
      name: 'weird',
      accepts: () => {
        throw new Error('boom')
      },
      answer: () => ({ decision: 'allowed-once' }),
    })
    const outcome = await ctx.approval.request(req(1))
    expect(outcome.decision).toBe('unavailable')
    expect(outcome.reason).toMatch(/boom/)
  })

  it('unloading the plugin that registered an answerer removes it and settles its pending requests', async () => {
    const fiber = ctx.plugin({
      name: 'channel',
      inject: ['approval'],
      apply: (c: Context) => void c.approval.registerAnswerer({ name: 'ch', answer: () => new Promise(() => {}) }),
    })
    await fiber
    const pending = ctx.approval.request(req(1))
    await new Promise((r) => setTimeout(r, 0))
    expect(ctx.approval.pending().map((p) => p.kind)).toEqual(['command'])
    await fiber.dispose()
    expect((await pending).decision).toBe('unavailable')
    expect(ctx.approval.answerers()).toEqual([])
  })

  it('a signal aborted before or during the request resolves cancelled; a timeout resolves unavailable', async () => {
    ctx.approval.registerAnswerer({ name: 'h', answer: () => new Promise(() => {}) })
    const early = new AbortController()
    early.abort('stop')
    expect((await ctx.approval.request(req(1), { signal: early.signal })).decision).toBe('cancelled')
    const late = new AbortController()
    const pending = ctx.approval.request(req(1), { signal: late.signal })
    late.abort('turn cancelled')
    expect(await pending).toMatchObject({ decision: 'cancelled', reason: expect.stringContaining('turn cancelled') })

    const timed = new Context()
    await timed.plugin(ApprovalService, { timeoutMs: 20 } as never)
    timed.approval.registerAnswerer({ name: 'h', answer: () => new Promise(() => {}) })
    expect(await timed.approval.request(req(1))).toMatchObject({
      decision: 'unavailable',
      reason: 'no answer within 20 ms',
    })
  })

  it('emits requested/resolved pairs with the minted request and rejects malformed requests', async () => {
    const seen: string[] = []
    ctx.on('approval/requested', (r: ApprovalRequest) => void seen.push(`requested ${r.id}`))
    ctx.on('approval/resolved', (r: ApprovalRequest, o) => void seen.push(`resolved ${r.id} ${o.decision}`))
    ctx.approval.registerAnswerer({ name: 'h', answer: () => ({ decision: 'allowed-once' }) })
    await ctx.approval.request(req({ x: 1 }))
    expect(seen).toHaveLength(2)
    expect(seen[1]).toBe(seen[0]!.replace('requested', 'resolved') + ' allowed-once')
    await expect(ctx.approval.request({ kind: 'command', title: 't' } as never)).rejects.toThrow(/action is required/)
    await expect(ctx.approval.request(req(1, { title: '' }))).rejects.toThrow(/title/)
    await expect(ctx.approval.request(req(1, { options: ['maybe' as never] }))).rejects.toThrow(
      /unknown option "maybe"/,
    )
    expect(() => ctx.approval.registerAnswerer({ name: '' } as never)).toThrow(TypeError)
  })

  it("hands a request's choice labels to the answerer, and refuses malformed ones", async () => {
    let seen: ApprovalRequest | undefined
    ctx.approval.registerAnswerer({
      name: 'h',
      answer: (r) => {
        seen = r
        return { decision: 'rejected' }
      },
    })
    const labels = { 'allowed-once': 'Apply it', rejected: 'Keep the patch only' } as const
    await ctx.approval.request(req(1, { options: ['allowed-once', 'rejected'], labels }))
    expect(seen?.labels).toEqual(labels)
    await expect(ctx.approval.request(req(1, { labels: { maybe: 'x' } as never }))).rejects.toThrow(
      /labels names an unknown choice "maybe"/,
    )
    await expect(ctx.approval.request(req(1, { labels: { rejected: ' ' } }))).rejects.toThrow(
      /the label of rejected must be a non-empty string/,
    )
    await expect(ctx.approval.request(req(1, { labels: ['x'] as never }))).rejects.toThrow(/labels must be an object/)
  })
})

describe('policyAnswerer', () => {
  it('never allows once, reject rejects, ask and on-failure reject saying no interactive approver exists', async () => {
    let policy: 'ask' | 'never' | 'reject' | 'on-failure' = 'never'
    ctx.approval.registerAnswerer(policyAnswerer(() => policy))
    expect(await ctx.approval.request(req(1))).toMatchObject({ decision: 'allowed-once', answeredBy: 'policy' })
    policy = 'reject'
    expect((await ctx.approval.request(req(1))).decision).toBe('rejected')
    for (policy of ['ask', 'on-failure'] as const) {
      const outcome = await ctx.approval.request(req(1))
      expect(outcome.decision).toBe('rejected')
      expect(outcome.reason).toContain('no interactive approver')
      expect(outcome.reason).toContain('--permission-mode')
    }
    policy = 'bogus' as never
    expect((await ctx.approval.request(req(1))).decision).toBe('unavailable')
  })

  it('never rejects a request that does not offer allowed-once', async () => {
    ctx.approval.registerAnswerer(policyAnswerer('never', { hint: 'x' }))
    expect((await ctx.approval.request(req(1, { options: ['allowed-always', 'rejected'] }))).decision).toBe('rejected')
  })
})
