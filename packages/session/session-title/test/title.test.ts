import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { createHarness } from '@dsh/agent-loop-testkit'
import SessionStore, { type AnySessionEvent } from '@dsh/session'
import JsonlPersistence from '@dsh/session-persistence-jsonl'
import SessionTitleService, {
  fallbackTitle,
  foldSessionTitle,
  type TitleProposal,
  type TitleProvider,
  type TitleRequest,
} from '@dsh/session-title'

const titles = (events: readonly AnySessionEvent[]) =>
  events
    .filter((e) => e.type === 'session/title')
    .map((e) => (e.type === 'session/title' ? `${e.data.source}:${e.data.title}` : ''))

function gate<T>() {
  let open!: (value: T) => void
  let fail!: (error: unknown) => void
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve
    fail = reject
  })
  return { promise, open, fail }
}

describe('fallbackTitle', () => {
  it('keeps a short prompt on one line', () => {
    expect(fallbackTitle('  fix the\n\nparser  ')).toBe('fix the parser')
  })
  it('cuts a long prompt at a word boundary with an ellipsis', () => {
    const title = fallbackTitle(
      'please refactor the session persistence layer so that listing a thousand sessions is fast',
      40,
    )!
    expect(title.length).toBeLessThanOrEqual(40)
    expect(title).toBe('please refactor the session persistence…')
  })
  it('cuts a prompt without spaces hard', () => {
    expect(fallbackTitle('x'.repeat(100), 20)).toBe(`${'x'.repeat(19)}…`)
  })
  it('has no title for an empty prompt', () => {
    expect(fallbackTitle(' \n ')).toBeUndefined()
  })
})

describe('ctx.sessionTitle', () => {
  it('logs the fallback from the first human prompt, once, and never shows it to the model', async () => {
    const h = await createHarness({ script: [{ text: 'ok' }, { text: 'ok' }], plugins: [[SessionTitleService]] })
    try {
      await h.prompt('Add a --json flag to the list command')
      await h.prompt('and tests please')
      expect(titles(h.session.events)).toEqual(['fallback:Add a --json flag to the list command'])
      expect(h.ctx.sessionTitle.get(h.session.id)).toMatchObject({
        title: 'Add a --json flag to the list command',
        source: 'fallback',
      })
      expect(foldSessionTitle(h.session.events)?.seq).toBe(h.session.last('session/title')!.seq)
      // Log-only: no request carries the title text beyond the prompt itself.
      for (const request of h.model.requests) expect(JSON.stringify(request.messages)).not.toContain('"fallback"')
      expect(h.model.requests[1].messages.filter((m) => m.role === 'user')).toHaveLength(2)
    } finally {
      await h.dispose()
    }
  })

  it('runs the provider beside the turn: the turn ends first, then the provided title is logged', async () => {
    const release = gate<string>()
    const seen: TitleRequest[] = []
    const provider: TitleProvider = {
      name: 'test',
      cadence: 'first-prompt',
      generate: (r) => (seen.push(r), release.promise),
    }
    const h = await createHarness({ script: [{ text: 'done' }], plugins: [[SessionTitleService]] })
    try {
      h.ctx.sessionTitle.registerProvider(provider)
      const result = await h.prompt('why is the build red')
      expect(result.reason).toBe('completed')
      expect(titles(h.session.events)).toEqual(['fallback:why is the build red'])
      expect(seen[0]).toMatchObject({ prompt: 'why is the build red', earlierPrompts: [] })
      expect(h.session.at(seen[0].promptSeq)?.type).toBe('user/message')
      release.open('"Investigate red build."')
      await h.ctx.sessionTitle.settled(h.session.id)
      expect(titles(h.session.events)).toEqual(['fallback:why is the build red', 'test:Investigate red build'])
    } finally {
      await h.dispose()
    }
  })

  it('keeps the fallback when the provider fails, and retries only through refresh()', async () => {
    let calls = 0
    const errors: string[] = []
    const h = await createHarness({ script: [{ text: 'a' }, { text: 'b' }], plugins: [[SessionTitleService]] })
    try {
      h.ctx.on(
        'session-title/error',
        (_id, provider, error) => void errors.push(`${provider}: ${(error as Error).message}`),
      )
      h.ctx.sessionTitle.registerProvider({
        name: 'flaky',
        cadence: 'first-prompt',
        generate: async () => {
          calls++
          if (calls === 1) throw new Error('rate limited')
          return 'Second try title'
        },
      })
      await h.prompt('first prompt here')
      await h.ctx.sessionTitle.settled(h.session.id)
      await h.prompt('second prompt')
      await h.ctx.sessionTitle.settled(h.session.id)
      expect(calls).toBe(1)
      expect(errors).toEqual(['flaky: rate limited'])
      expect(h.ctx.sessionTitle.get(h.session.id)?.title).toBe('first prompt here')
      const refreshed = await h.ctx.sessionTitle.refresh(h.session.id)
      expect(calls).toBe(2)
      expect(refreshed).toMatchObject({ title: 'Second try title', source: 'flaky' })
    } finally {
      await h.dispose()
    }
  })

  it('all-prompts: a newer prompt supersedes older work even when the provider ignores the abort', async () => {
    const pending: Array<ReturnType<typeof gate<string>>> = []
    const h = await createHarness({ script: [{ text: 'a' }, { text: 'b' }], plugins: [[SessionTitleService]] })
    try {
      h.ctx.sessionTitle.registerProvider({
        name: 'slow',
        cadence: 'all-prompts',
        generate: () => {
          const g = gate<string>()
          pending.push(g)
          return g.promise
        },
      })
      await h.prompt('one')
      await h.prompt('two')
      expect(pending).toHaveLength(2)
      pending[0].open('Stale title')
      pending[1].open('Fresh title')
      await h.ctx.sessionTitle.settled(h.session.id)
      await new Promise((r) => setImmediate(r))
      expect(titles(h.session.events)).toEqual(['fallback:one', 'slow:Fresh title'])
    } finally {
      await h.dispose()
    }
  })

  it('a title set by hand wins over provider work in flight', async () => {
    const release = gate<string>()
    const h = await createHarness({ script: [{ text: 'a' }], plugins: [[SessionTitleService]] })
    try {
      h.ctx.sessionTitle.registerProvider({ name: 'p', cadence: 'first-prompt', generate: () => release.promise })
      await h.prompt('hello there')
      h.ctx.sessionTitle.set(h.session.id, 'My name')
      release.open('Model name')
      await new Promise((r) => setImmediate(r))
      expect(h.ctx.sessionTitle.get(h.session.id)).toMatchObject({ title: 'My name', source: 'user' })
      expect(() => h.ctx.sessionTitle.set(h.session.id, '   ')).toThrow(/needs some text/)
      expect(() => h.ctx.sessionTitle.set('nope', 'x')).toThrow(/no live session nope/)
    } finally {
      await h.dispose()
    }
  })

  it('does not retitle a fork that carries its source title, and allows one provider at a time', async () => {
    const h = await createHarness({ script: [{ text: 'a' }, { text: 'b' }], plugins: [[SessionTitleService]] })
    try {
      await h.prompt('original task')
      const fork = h.ctx.sessions.fork(h.session)
      expect(titles(fork.events)).toEqual(['fallback:original task'])
      const off = h.ctx.sessionTitle.registerProvider({ name: 'a', cadence: 'first-prompt', generate: async () => 'x' })
      expect(() =>
        h.ctx.sessionTitle.registerProvider({ name: 'b', cadence: 'first-prompt', generate: async () => 'y' }),
      ).toThrow(/"a" is already registered/)
      off()
      expect(h.ctx.sessionTitle.provider()).toBeUndefined()
    } finally {
      await h.dispose()
    }
  })

  it('logs the usage a provider reports as title/usage, even when the title is not used', async () => {
    const pending: Array<ReturnType<typeof gate<string | TitleProposal>>> = []
    const errors: string[] = []
    const h = await createHarness({
      script: [{ text: 'a' }, { text: 'b' }, { text: 'c' }],
      plugins: [[SessionTitleService]],
    })
    const usages = () => h.session.events.flatMap((e) => (e.type === 'title/usage' ? [e.data] : []))
    try {
      h.ctx.on('session-title/error', (_id, _p, error) => void errors.push((error as Error).message))
      h.ctx.sessionTitle.registerProvider({
        name: 'metered',
        cadence: 'all-prompts',
        generate: () => {
          const g = gate<string | TitleProposal>()
          pending.push(g)
          return g.promise
        },
      })
      await h.prompt('one')
      await h.prompt('two')
      // The superseded request still spent tokens: they are logged, its title is not.
      pending[0].open({ title: 'Stale', usage: { input: 10, output: 2 }, provider: 'route', model: 'm1' })
      pending[1].open({
        title: 'Fresh',
        usage: { input: 30, output: 4, cacheRead: 5, reasoning: 1 },
        provider: 'route',
        model: 'm1',
      })
      await h.ctx.sessionTitle.settled(h.session.id)
      await new Promise((r) => setImmediate(r))
      expect(titles(h.session.events)).toEqual(['fallback:one', 'metered:Fresh'])
      expect(usages()).toEqual([
        {
          source: 'metered',
          provider: 'route',
          model: 'm1',
          usage: { input: 10, output: 2, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
        },
        {
          source: 'metered',
          provider: 'route',
          model: 'm1',
          usage: { input: 30, output: 4, cacheRead: 5, cacheWrite: 0, reasoning: 1 },
        },
      ])
      // An empty title keeps the current one but its usage is logged; bad counts read as 0; a
      // bare string or a proposal without usage logs nothing.
      await h.prompt('three')
      pending[2].open({ title: '  ', usage: { input: -3, output: Number.NaN } })
      await h.ctx.sessionTitle.settled(h.session.id)
      expect(errors).toEqual(['the provider returned an empty title'])
      expect(usages().at(-1)).toEqual({
        source: 'metered',
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      })
      expect(h.ctx.sessionTitle.get(h.session.id)?.title).toBe('Fresh')
      const count = usages().length
      const refreshing = h.ctx.sessionTitle.refresh(h.session.id)
      pending[3].open({ title: 'No usage here' })
      await refreshing
      const refreshing2 = h.ctx.sessionTitle.refresh(h.session.id)
      pending[4].open('Plain text')
      await refreshing2
      expect(usages()).toHaveLength(count)
      expect(h.ctx.sessionTitle.get(h.session.id)?.title).toBe('Plain text')
      // Log-only: no model request mentions it.
      for (const request of h.model.requests) expect(JSON.stringify(request)).not.toContain('metered')
    } finally {
      await h.dispose()
    }
  })

  it('an answer that arrives after the plugin unloaded writes nothing, not even its usage', async () => {
    const release = gate<string | TitleProposal>()
    const h = await createHarness({ script: [{ text: 'a' }] })
    try {
      const mounted = await h.mount(SessionTitleService)
      h.ctx.sessionTitle.registerProvider({ name: 'late', cadence: 'first-prompt', generate: () => release.promise })
      await h.prompt('late answer')
      const before = h.session.length
      await mounted.dispose()
      release.open({ title: 'Too late', usage: { input: 5, output: 1 } })
      await new Promise((r) => setImmediate(r))
      expect(h.session.length).toBe(before)
    } finally {
      await h.dispose()
    }
  })

  it('registers title/usage with persistence as an ignorable type', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-title-'))
    const ctx = new Context()
    try {
      await ctx.plugin(SessionStore)
      await ctx.plugin(JsonlPersistence, { root: join(dir, 'sessions'), fsync: false })
      const fiber = ctx.plugin(SessionTitleService)
      await fiber
      expect(ctx.sessionPersistence.isKnownType('title/usage')).toBe(true)
      await fiber.dispose()
      expect(ctx.sessionPersistence.isKnownType('title/usage')).toBe(false)
    } finally {
      await ctx.fiber.dispose?.()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('unloading the plugin stops titling', async () => {
    const h = await createHarness({ script: [{ text: 'a' }] })
    try {
      const mounted = await h.mount(SessionTitleService)
      await mounted.dispose()
      await h.prompt('no title please')
      expect(titles(h.session.events)).toEqual([])
    } finally {
      await h.dispose()
    }
  })
})
