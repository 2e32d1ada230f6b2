import { describe, expect, it } from 'vitest'
import { createHarness } from '@dsh/agent-loop-testkit'
import SessionTelemetry, { envFlag, type TelemetryRecord } from '@dsh/session-telemetry'

async function run(config: Record<string, unknown> = {}) {
  const h = await createHarness({
    script: [
      {
        toolCalls: [
          { name: 'nope', arguments: {} },
          { name: 'echo', arguments: { text: 'hi' } },
        ],
        usage: { input: 5, output: 1 },
      },
      { text: 'answer', usage: { input: 6, output: 2, cacheRead: 4 } },
    ],
    plugins: [[SessionTelemetry, config]],
  })
  h.ctx.tools.register<{ text: string }>({
    name: 'echo',
    description: 'echo',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    execute: (a) => ({ content: a.text }),
  })
  const records: TelemetryRecord[] = []
  const off = h.ctx.sessionTelemetry.registerExporter({ name: 'test', export: (r) => void records.push(r) })
  return { h, records, off }
}

describe('ctx.sessionTelemetry', () => {
  it('one record per model call, tool call and turn, with figures and no content by default', async () => {
    const { h, records } = await run()
    try {
      await h.prompt('private words')
      expect(records.map((r) => r.kind)).toEqual(['model_call', 'tool_call', 'tool_call', 'model_call', 'turn'])
      expect(records[0]).toMatchObject({
        kind: 'model_call',
        sessionId: h.session.id,
        provider: 'scripted',
        model: 'scripted-1',
        step: 0,
        toolCalls: 2,
        tokens: { input: 5, output: 1 },
      })
      const tools = records.filter((r) => r.kind === 'tool_call')
      expect(tools.map((r) => [r.kind === 'tool_call' && r.tool, r.kind === 'tool_call' && r.isError])).toEqual([
        ['nope', true],
        ['echo', false],
      ])
      expect(records.at(-1)).toMatchObject({
        kind: 'turn',
        reason: 'completed',
        steps: 2,
        modelCalls: 2,
        toolCalls: 2,
        toolErrors: 1,
        tokens: { input: 11, output: 3, cacheRead: 4 },
      })
      expect(JSON.stringify(records)).not.toContain('private words')
      expect(JSON.stringify(records)).not.toContain('answer')
    } finally {
      await h.dispose()
    }
  })

  it('includeContent adds prompt, output, arguments and result', async () => {
    const { h, records } = await run({ includeContent: true })
    try {
      await h.prompt('private words')
      expect(records.at(-1)).toMatchObject({ kind: 'turn', prompt: 'private words' })
      expect(records.find((r) => r.kind === 'tool_call' && r.tool === 'echo')).toMatchObject({
        arguments: '{"text":"hi"}',
        result: 'hi',
      })
      expect(records.at(-2)).toMatchObject({ kind: 'model_call', output: 'answer' })
    } finally {
      await h.dispose()
    }
  })

  it('an exporter that throws does not stop the others; the disposer unregisters', async () => {
    const { h, records, off } = await run()
    const errors: string[] = []
    h.ctx.on('session-telemetry/error', (name) => void errors.push(name))
    h.ctx.sessionTelemetry.registerExporter({
      name: 'broken',
      export: () => {
        throw new Error('x')
      },
    })
    try {
      await h.prompt('one')
      expect(records.length).toBe(5)
      expect(errors).toHaveLength(5)
      off()
      await h.prompt('two')
      expect(records.length).toBe(5)
    } finally {
      await h.dispose()
    }
    expect([envFlag('1'), envFlag('TRUE'), envFlag('on'), envFlag('0'), envFlag(undefined), envFlag('nah')]).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ])
  })

  it('replay folds a whole log into the records live following built; feedback events become feedback records', async () => {
    const { h, records } = await run({ includeContent: true })
    try {
      await h.prompt('private words')
      const answer = h.session.events.findLast((e) => e.type === 'assistant/message')!
      // The feedback packages declare these types; the seam reads them by name.
      const append = h.session.append.bind(h.session) as (type: string, data: unknown) => { seq: number }
      const like = append('feedback/message', { messageSeq: answer.seq, rating: 'like', note: 'clear' })
      const text = append('feedback/record', { text: 'good session', source: 'command' })
      expect(records.slice(-2)).toMatchObject([
        { kind: 'feedback', target: 'message', rating: 'like', messageSeq: answer.seq, seq: like.seq, note: 'clear' },
        { kind: 'feedback', target: 'session', source: 'command', seq: text.seq, note: 'good session' },
      ])
      expect(h.ctx.sessionTelemetry.replay(h.session.events, h.session.id)).toEqual(records)
    } finally {
      await h.dispose()
    }
  })
})
