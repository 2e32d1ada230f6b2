import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { CodedError, type JsonValue, type StopInfo } from '../src/index.ts'

class ProbeError extends CodedError<'BAD' | 'WORSE'> {
  override name = 'ProbeError'
}

describe('@dsh/brand vocabulary', () => {
  it('a CodedError subclass keeps its code, name, message, cause and instanceof', () => {
    const cause = new Error('root')
    const error = new ProbeError('BAD', 'it went bad', { cause })
    expect(error).toBeInstanceOf(ProbeError)
    expect(error).toBeInstanceOf(CodedError)
    expect(error).toBeInstanceOf(Error)
    expect([error.code, error.name, error.message, error.cause]).toEqual(['BAD', 'ProbeError', 'it went bad', cause])
    expect(String(error)).toBe('ProbeError: it went bad')
  })

  it('app/stopping listeners are typed: the StopInfo they get is the one emitted', async () => {
    const ctx = new Context()
    const seen: StopInfo[] = []
    ctx.on('app/stopping', (info) => {
      seen.push(info)
      info.code = 0
    })
    const info: StopInfo = { reason: 'signal', signal: 'SIGTERM', code: 143 }
    await ctx.parallel('app/stopping', info)
    expect(seen).toEqual([info])
    expect(info.code).toBe(0)
    const json: JsonValue = { reason: info.reason, code: info.code, nested: [1, 'two', null, true] }
    expect(JSON.parse(JSON.stringify(json))).toEqual(json)
  })
})
