import { describe, expect, it } from 'vitest'
import { createHarness } from '@dsh/agent-loop-testkit'
import { LlmError, type LlmAdapter, type LlmRequest, type StreamChunk } from '@dsh/llm'
import SessionTitleService from '@dsh/session-title'
import * as TitleLlm from '@dsh/session-title-llm'

const TITLE_USAGE = { input: 61, output: 6, cacheRead: 12, cacheWrite: 0, reasoning: 0 }

/** A second route answering title requests: text, an error, or nothing until aborted. */
function titler(answer: 'hang' | Error | string): LlmAdapter & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = []
  return {
    provider: 'titler',
    requests,
    listModels: () => [{ provider: 'titler', id: 't1', contextWindow: 8000 }],
    async *stream(request): AsyncIterable<StreamChunk> {
      requests.push(request)
      if (answer instanceof Error) throw answer
      if (answer === 'hang') {
        await new Promise((_, reject) =>
          request.signal?.addEventListener('abort', () => reject(new LlmError('ABORTED', 'aborted'))),
        )
        return
      }
      yield { kind: 'text-delta', text: answer }
      yield { kind: 'usage', usage: TITLE_USAGE }
      yield { kind: 'finish', reason: 'stop' }
    },
  }
}

async function setup(answer: 'hang' | Error | string, config: Record<string, unknown> = {}) {
  const adapter = titler(answer)
  const h = await createHarness({ script: [{ text: 'ok' }, { text: 'ok' }], plugins: [[SessionTitleService]] })
  h.ctx.llm.registerAdapter(adapter)
  await h.mount(TitleLlm, { provider: 'titler', model: 't1', ...config })
  return { h, adapter }
}

const titleEvents = (h: Awaited<ReturnType<typeof setup>>['h']) =>
  h.session.events.flatMap((e) => (e.type === 'session/title' ? [`${e.data.source}:${e.data.title}`] : []))

describe('@dsh/session-title-llm', () => {
  it('asks the configured model once, with the prompt and no tools, and logs its first line', async () => {
    const { h, adapter } = await setup('Speed up session listing\nextra line')
    try {
      await h.prompt('the sessions list is slow with 1000 sessions, make it fast')
      await h.ctx.sessionTitle.settled(h.session.id)
      await h.prompt('and add a bench')
      await h.ctx.sessionTitle.settled(h.session.id)
      expect(adapter.requests).toHaveLength(1)
      const request = adapter.requests[0]
      expect(request).toMatchObject({ provider: 'titler', model: 't1', system: TitleLlm.SYSTEM, maxTokens: 40 })
      expect(request.tools).toBeUndefined()
      expect(JSON.stringify(request.messages)).toContain('make it fast')
      expect(titleEvents(h)).toEqual([
        'fallback:the sessions list is slow with 1000 sessions, make it fast',
        'llm:Speed up session listing',
      ])
      // What the title request cost is logged apart from the turns, with the route and model asked.
      const usage = h.session.events.flatMap((e) => (e.type === 'title/usage' ? [e.data] : []))
      expect(usage).toEqual([{ source: 'llm', provider: 'titler', model: 't1', usage: TITLE_USAGE }])
      // The main model never saw the title request.
      expect(h.model.requests).toHaveLength(2)
    } finally {
      await h.dispose()
    }
  })

  it('all-prompts cadence sends earlier prompts along', async () => {
    const { h, adapter } = await setup('Some title', { cadence: 'all-prompts' })
    try {
      await h.prompt('first thing')
      await h.ctx.sessionTitle.settled(h.session.id)
      await h.prompt('second thing')
      await h.ctx.sessionTitle.settled(h.session.id)
      expect(adapter.requests).toHaveLength(2)
      expect(TitleLlm.titlePrompt({ prompt: 'second thing', earlierPrompts: ['first thing'] }, 100)).toBe(
        'Earlier requests:\n- first thing\n\nRequest to title:\nsecond thing',
      )
      expect(JSON.stringify(adapter.requests[1].messages)).toContain('first thing')
    } finally {
      await h.dispose()
    }
  })

  it('a provider error keeps the fallback and is reported', async () => {
    const { h } = await setup(new LlmError('RATE_LIMIT', 'slow down'))
    const errors: string[] = []
    h.ctx.on('session-title/error', (_id, _p, error) => void errors.push((error as Error).message))
    try {
      const result = await h.prompt('keep my fallback')
      expect(result.reason).toBe('completed')
      await h.ctx.sessionTitle.settled(h.session.id)
      expect(titleEvents(h)).toEqual(['fallback:keep my fallback'])
      expect(errors).toEqual(['slow down'])
    } finally {
      await h.dispose()
    }
  })

  it('a request that never answers is abandoned after timeoutMs; the turn does not wait for it', async () => {
    const { h } = await setup('hang', { timeoutMs: 100 })
    try {
      const result = await h.prompt('hanging title model')
      expect(result.reason).toBe('completed')
      await h.ctx.sessionTitle.settled(h.session.id)
      expect(titleEvents(h)).toEqual(['fallback:hanging title model'])
    } finally {
      await h.dispose()
    }
  })

  it('without a model selection the failure names what to configure', async () => {
    const adapter = titler('x')
    const h = await createHarness({ script: [{ text: 'ok' }], plugins: [[SessionTitleService]] })
    const errors: string[] = []
    h.ctx.on('session-title/error', (_id, _p, error) => void errors.push((error as Error).message))
    h.ctx.llm.registerAdapter(adapter)
    await h.mount(TitleLlm, {})
    try {
      await h.prompt('no model row')
      await h.ctx.sessionTitle.settled(h.session.id)
      expect(errors[0]).toMatch(/set provider and model/)
    } finally {
      await h.dispose()
    }
  })
})
