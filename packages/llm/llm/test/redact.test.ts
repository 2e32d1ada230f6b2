import { Context, Service } from 'cordis'
import { describe, expect, it } from 'vitest'
import LlmService, {
  LlmError,
  REDACTED,
  redactError,
  redactText,
  secretList,
  type LlmAdapter,
  type LlmRequest,
} from '../src/index.ts'

const KEY = 'sk-redact-0123456789abcdef'
const OTHER = 'tok-credentials-file-9876543210'

describe('redaction helpers', () => {
  it('secretList drops short and empty values, adds the URL-encoded form, longest first', () => {
    expect(secretList(['short', undefined, '', 'a value/with+plus', KEY])).toEqual([
      KEY,
      'a%20value%2Fwith%2Bplus',
      'a value/with+plus',
    ])
  })

  it('redactText replaces every occurrence', () => {
    expect(redactText(`Bearer ${KEY} and again ${KEY}`, [KEY])).toBe(`Bearer ${REDACTED} and again ${REDACTED}`)
  })

  it('redactError rebuilds an LlmError that carries a secret in its message, stack or cause', () => {
    const cause = Object.assign(new Error(`socket said ${KEY}`), { code: 'ECONNRESET' })
    const error = new LlmError('AUTH', `HTTP 401: bad key Bearer ${KEY}`, {
      status: 401,
      provider: 'p',
      retryAfterMs: 5,
      cause,
    })
    const clean = redactError(error, [KEY]) as LlmError
    expect(clean).not.toBe(error)
    expect(LlmError.is(clean)).toBe(true)
    expect(clean.toJSON()).toEqual({
      code: 'AUTH',
      message: `HTTP 401: bad key Bearer ${REDACTED}`,
      status: 401,
      provider: 'p',
      retryAfterMs: 5,
    })
    expect(clean.stack).not.toContain(KEY)
    expect((clean.cause as Error).message).toBe(`socket said ${REDACTED}`)
    expect((clean.cause as { code?: string }).code).toBe('ECONNRESET')
    expect(JSON.stringify(clean) + String(clean.stack) + String((clean.cause as Error).stack)).not.toContain(KEY)
  })

  it('leaves an error without secrets untouched', () => {
    const error = new LlmError('SERVER', 'HTTP 500: boom')
    expect(redactError(error, [KEY])).toBe(error)
    expect(redactError(error, [])).toBe(error)
  })
})

class FakeCredentials extends Service {
  constructor(ctx: Context) {
    super(ctx, 'credentials' as never)
  }
  async knownValues() {
    return [OTHER]
  }
}

const request: LlmRequest = {
  provider: 'leaky',
  model: 'm',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
}

describe('ctx.llm.stream redacts errors at the choke point', () => {
  it('scrubs remembered adapter keys and the credentials service known values', async () => {
    const root = new Context()
    await root.plugin(LlmService)
    await root.plugin(FakeCredentials as never, {} as never)
    const adapter: LlmAdapter = {
      provider: 'leaky',
      // biome-ignore lint/correctness/useYield: an adapter stream that fails before its first chunk, as a refused key does
      async *stream() {
        throw new LlmError('AUTH', `echo: authorization: Bearer ${KEY}; x-other: ${OTHER}`, { status: 401 })
      },
      listModels: () => [],
    }
    root.llm.registerAdapter(adapter)
    root.llm.rememberSecret(KEY)
    let caught: unknown
    try {
      for await (const _ of root.llm.stream(request)) void _
    } catch (error) {
      caught = error
    }
    expect(LlmError.is(caught)).toBe(true)
    const error = caught as LlmError
    expect(error.code).toBe('AUTH')
    expect(error.status).toBe(401)
    expect(error.message).toBe(`echo: authorization: Bearer ${REDACTED}; x-other: ${REDACTED}`)
    expect(String(error.stack)).not.toContain(KEY)
    expect(String(error.stack)).not.toContain(OTHER)
  })
})
