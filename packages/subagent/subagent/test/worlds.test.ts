// Worlds (`registerWorld`): a child started with `world: NAME` runs inside that world's lease,
// opened before the provider starts it and closed after it was disposed; bad requests are one
// sentence each.
import { afterEach, describe, expect, it } from 'vitest'
import { AsyncLocalStorage } from 'node:async_hooks'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SubagentService, { SubagentError, type SubagentLink } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

describe('subagent worlds', () => {
  it('runs an in-process child inside the lease and closes it after the child ended', async () => {
    // The child's one request is answered from inside the world: the model sees which place it ran in.
    const place = new AsyncLocalStorage<string>()
    const events: string[] = []
    harness = await createHarness({
      script: [() => ({ text: `ran in ${place.getStore() ?? 'the parent world'}` })],
      plugins: [[SubagentService, {}]],
    })
    const subagents = harness.ctx.subagents
    subagents.registerWorld({
      name: 'far',
      open(link: SubagentLink) {
        events.push(`open ${link.id}`)
        return {
          run: (fn) => place.run(`far/${link.id}`, fn),
          close: async () => void events.push(`close ${link.id}`),
        }
      },
    })
    expect(subagents.worlds().map((w) => w.name)).toEqual(['far'])
    const record = await subagents.run({ parent: harness.agent, description: 'd', prompt: 'p', world: 'far' })
    expect(record).toMatchObject({ status: 'completed', text: 'ran in far/sub-1' })
    expect(events).toEqual(['open sub-1', 'close sub-1'])
  })

  it("the row's world is the default while that world is registered", async () => {
    const place = new AsyncLocalStorage<string>()
    harness = await createHarness({
      script: [
        () => ({ text: `in ${place.getStore() ?? 'the parent world'}` }),
        () => ({ text: `in ${place.getStore() ?? 'the parent world'}` }),
      ],
      plugins: [[SubagentService, { world: 'far' }]],
    })
    const subagents = harness.ctx.subagents
    // Not registered (yet): the configured default does not apply.
    expect(await subagents.run({ parent: harness.agent, description: 'd', prompt: 'p' })).toMatchObject({
      text: 'in the parent world',
    })
    subagents.registerWorld({
      name: 'far',
      open: (link) => ({ run: (fn) => place.run(`far/${link.id}`, fn), close: async () => {} }),
    })
    expect(await subagents.run({ parent: harness.agent, description: 'd', prompt: 'p' })).toMatchObject({
      text: 'in far/sub-2',
    })
  })

  it('an unknown world or a provider that cannot enter one is refused, nothing started', async () => {
    harness = await createHarness({ plugins: [[SubagentService, {}]] })
    const subagents = harness.ctx.subagents
    const refused = async (options: Record<string, unknown>) => {
      try {
        await subagents.start({ parent: harness!.agent, description: 'd', prompt: 'p', ...options })
      } catch (error) {
        expect(SubagentError.is(error)).toBe(true)
        return error as SubagentError
      }
      throw new Error('expected a refusal')
    }
    expect(await refused({ world: 'e2b' })).toMatchObject({
      code: 'INVALID_REQUEST',
      message:
        'unknown world "e2b"; this run has no other world (dsh --world e2b adds "e2b"); leave world out to run the child in yours',
    })
    subagents.registerWorld({ name: 'far', open: () => ({ run: (fn) => fn(), close: async () => {} }) })
    subagents.registerProvider({ name: 'outside', start: () => Promise.reject(new Error('never')) })
    expect(await refused({ world: 'mars' })).toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'unknown world "mars"; available: far; leave world out to run the child in yours',
    })
    expect(await refused({ world: 'far', provider: 'outside' })).toMatchObject({
      code: 'NOT_SUPPORTED',
      message: 'provider "outside" cannot run a child in the world "far"; use "spawn" or "fork"',
    })
    expect(subagents.list(harness.agent)).toEqual([])
  })
})
