// The workflow seam: the spawn-request check, the default child description, the error codes, and
// the abstract WorkflowEngine providing `ctx.workflowEngine` in a real Cordis tree.
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import {
  checkChildRequest,
  describePrompt,
  WORKFLOW_ERROR_CODES,
  WorkflowEngine,
  type WorkflowLimits,
  type WorkflowRunRequest,
  type WorkflowRunResult,
} from '../src/index.ts'
import * as Workflow from '../src/index.ts'

describe('checkChildRequest', () => {
  it('accepts a prompt with optional description and provider', () => {
    expect(checkChildRequest({ prompt: 'Review src/a.ts' })).toBeUndefined()
    expect(checkChildRequest({ prompt: 'x', description: 'review a', provider: 'fork' })).toBeUndefined()
    expect(checkChildRequest({ prompt: 'x', description: undefined, provider: undefined })).toBeUndefined()
    expect(checkChildRequest({ prompt: 'x', description: '' })).toBeUndefined()
  })

  it('refuses anything that is not one plain object', () => {
    const shape = 'agents.spawn takes one object: { prompt, description?, provider?, world? }'
    for (const bad of [undefined, null, 'review a', 42, true, [], [{ prompt: 'x' }]])
      expect(checkChildRequest(bad), String(bad)).toBe(shape)
  })

  it('refuses a missing, non-string or blank prompt', () => {
    const message = 'agents.spawn: prompt must be a non-empty string'
    for (const bad of [
      {},
      { prompt: '' },
      { prompt: '  \n\t' },
      { prompt: 7 },
      { prompt: null },
      { prompt: ['a'] },
      { description: 'only a label' },
    ]) {
      expect(checkChildRequest(bad), JSON.stringify(bad)).toBe(message)
    }
  })

  it('refuses a non-string description or provider', () => {
    expect(checkChildRequest({ prompt: 'x', description: 3 })).toBe('agents.spawn: description must be a string')
    expect(checkChildRequest({ prompt: 'x', description: null })).toBe('agents.spawn: description must be a string')
    expect(checkChildRequest({ prompt: 'x', provider: { name: 'spawn' } })).toBe(
      'agents.spawn: provider must be a string',
    )
    expect(checkChildRequest({ prompt: 'x', provider: false })).toBe('agents.spawn: provider must be a string')
  })

  it('takes a world by name and refuses a non-string or empty one', () => {
    expect(checkChildRequest({ prompt: 'x', world: 'e2b' })).toBeUndefined()
    for (const bad of ['', 3, { name: 'e2b' }, null])
      expect(checkChildRequest({ prompt: 'x', world: bad }), JSON.stringify(bad)).toBe(
        'agents.spawn: world must be a non-empty string (e.g. "e2b")',
      )
  })

  it('names unexpected fields (singular and plural)', () => {
    expect(checkChildRequest({ prompt: 'x', model: 'big' })).toBe(
      'agents.spawn: unexpected field model (allowed: prompt, description, provider, world)',
    )
    expect(checkChildRequest({ prompt: 'x', tools: [], timeoutMs: 5 })).toBe(
      'agents.spawn: unexpected fields tools, timeoutMs (allowed: prompt, description, provider, world)',
    )
  })

  it('reports the first problem in a fixed order: shape, prompt, description, provider, extra fields', () => {
    expect(checkChildRequest({ prompt: '', description: 1, provider: 2, extra: 3 })).toBe(
      'agents.spawn: prompt must be a non-empty string',
    )
    expect(checkChildRequest({ prompt: 'x', description: 1, provider: 2, extra: 3 })).toBe(
      'agents.spawn: description must be a string',
    )
    expect(checkChildRequest({ prompt: 'x', provider: 2, extra: 3 })).toBe('agents.spawn: provider must be a string')
  })
})

describe('describePrompt', () => {
  it('is the first line of the trimmed prompt, cut to 60 characters with an ellipsis', () => {
    expect(describePrompt('  Review the parser  \nthen the lexer')).toBe('Review the parser')
    expect(describePrompt('\n\n  later line\nmore')).toBe('later line')
    expect(describePrompt('a'.repeat(60))).toBe('a'.repeat(60))
    const long = describePrompt('b'.repeat(61))
    expect(long).toBe(`${'b'.repeat(57)}...`)
    expect(long).toHaveLength(60)
  })
})

describe('WORKFLOW_ERROR_CODES', () => {
  it('lists every run error code once', () => {
    expect([...WORKFLOW_ERROR_CODES]).toEqual([
      'SYNTAX',
      'THROWN',
      'TIMEOUT',
      'MEMORY',
      'CANCELLED',
      'UNSERIALIZABLE',
      'DEPTH_LIMIT',
      'INTERNAL',
      'REFUSED',
    ])
    expect(new Set(WORKFLOW_ERROR_CODES).size).toBe(WORKFLOW_ERROR_CODES.length)
    expect(Workflow.name).toBe('workflow')
  })
})

describe('WorkflowEngine', () => {
  const config: WorkflowLimits = { maxChildren: 8, maxConcurrent: 2, timeoutMs: 1000, maxDepth: 1 }
  // The smallest concrete engine: enough to show what the abstract class provides.
  class CappingEngine extends WorkflowEngine {
    resolveLimits(requested: Partial<WorkflowLimits> = {}): WorkflowLimits {
      const pick = (key: keyof WorkflowLimits) => Math.min(requested[key] ?? config[key], config[key])
      return {
        maxChildren: pick('maxChildren'),
        maxConcurrent: pick('maxConcurrent'),
        timeoutMs: pick('timeoutMs'),
        maxDepth: pick('maxDepth'),
      }
    }
    async run(request: WorkflowRunRequest): Promise<WorkflowRunResult> {
      return {
        status: 'completed',
        value: request.input ?? null,
        logs: [],
        children: [],
        limits: this.resolveLimits(request.limits),
        durationMs: 0,
      }
    }
  }

  it('provides ctx.workflowEngine while its plugin is loaded, and withdraws it on unload', async () => {
    const ctx = new Context()
    expect(ctx.get('workflowEngine')).toBeUndefined()
    const fiber = await ctx.plugin(CappingEngine)
    expect(ctx.workflowEngine).toBeInstanceOf(WorkflowEngine)
    expect(ctx.workflowEngine.resolveLimits({ maxConcurrent: 5, timeoutMs: 10 })).toEqual({
      maxChildren: 8,
      maxConcurrent: 2,
      timeoutMs: 10,
      maxDepth: 1,
    })
    const result = await ctx.workflowEngine.run({
      parent: undefined as never,
      script: 'return input',
      input: { a: [1] },
    })
    expect(result).toMatchObject({ status: 'completed', value: { a: [1] } })
    // A consumer that injects it starts only while it is there.
    let seen = false
    await ctx.plugin({
      name: 'consumer',
      inject: ['workflowEngine'],
      apply: (c: Context) => void (seen = c.workflowEngine instanceof WorkflowEngine),
    })
    expect(seen).toBe(true)
    await fiber.dispose()
    expect(ctx.get('workflowEngine')).toBeUndefined()
  })
})
