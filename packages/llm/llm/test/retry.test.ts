import { describe, expect, it } from 'vitest'
import { defaultRetryPolicy, retryPolicySchema } from '../src/index.ts'

describe('retryPolicySchema', () => {
  it('fills the documented defaults', () => {
    expect(retryPolicySchema({})).toEqual({
      maxRetries: 5,
      initialDelayMs: 500,
      maxDelayMs: 10_000,
      jitter: 0.1,
      codes: ['EMPTY_RESPONSE', 'RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT'],
    })
    expect(retryPolicySchema({})).toEqual(defaultRetryPolicy())
  })

  it('keeps explicit values and rejects bad ones', () => {
    expect(retryPolicySchema({ maxRetries: 0, codes: ['SERVER'] })).toMatchObject({ maxRetries: 0, codes: ['SERVER'] })
    expect(() => retryPolicySchema({ jitter: 2 })).toThrow()
    expect(() => retryPolicySchema({ maxRetries: -1 })).toThrow()
    expect(() => retryPolicySchema({ codes: ['NOT_A_CODE'] } as never)).toThrow()
  })
})
