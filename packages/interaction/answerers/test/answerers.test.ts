import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { AnswererList, type Answerer } from '../src/index.ts'

interface Req {
  kind: string
}
type A = Answerer<Req> & { answer(): string }

describe('AnswererList', () => {
  it('routes to the newest accepting answerer and unwinds with the registering plugin', async () => {
    const list = new AnswererList<Req, A>('approval')
    const root = new Context()
    list.register(root, { name: 'any', answer: () => 'any' })
    const fiber = root.plugin({
      name: 'channel',
      apply(ctx: Context) {
        list.register(ctx, { name: 'cmd', accepts: (r) => r.kind === 'command', answer: () => 'cmd' })
      },
    })
    await fiber
    expect(list.names()).toEqual(['cmd', 'any'])
    const picked = list.pick({ kind: 'command' })
    expect(picked && 'entry' in picked && picked.entry.answerer.name).toBe('cmd')
    const gone = picked && 'entry' in picked ? picked.entry.gone.signal : undefined
    const other = list.pick({ kind: 'write' })
    expect(other && 'entry' in other && other.entry.answerer.name).toBe('any')
    await fiber.dispose()
    expect(list.names()).toEqual(['any'])
    expect(gone?.aborted).toBe(true)
    expect(String(gone?.reason)).toContain('approval answerer "cmd" was removed')
  })

  it('rejects malformed answerers and reports a throwing accepts() as an error', () => {
    const list = new AnswererList<Req, A>('question')
    const root = new Context()
    expect(() => list.register(root, { name: '', answer: () => '' })).toThrow(/name must be a non-empty string/)
    expect(() => list.register(root, { name: 'x' } as never)).toThrow(/expected \{name, answer\}/)
    list.register(root, {
      name: 'boom',
      accepts: () => {
        throw new Error('bad routing')
      },
      answer: () => '',
    })
    expect(list.pick({ kind: 'x' }, 'the questions')).toEqual({
      error: 'question answerer "boom" failed to route the questions: bad routing',
    })
    expect(list.available({ kind: 'x' })).toBe(false)
    expect(new AnswererList<Req, A>('approval').pick({ kind: 'x' })).toBeUndefined()
  })
})
