import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import {
  CredentialError,
  CredentialsService,
  checkCredentialName,
  type CredentialDescription,
  type CredentialLayer,
} from '../src/index.ts'

/** The smallest provider: one read-only in-memory layer. */
class FixedCredentials extends CredentialsService {
  constructor(
    ctx: Context,
    private readonly values: Record<string, string> = {},
  ) {
    super(ctx)
  }
  private layer(status: CredentialLayer['status']): CredentialLayer {
    return { id: 'fixed', label: 'the fixed test table', writable: false, status }
  }
  async get(name: string) {
    checkCredentialName(name)
    return this.values[name]
  }
  async describe(name: string): Promise<CredentialDescription> {
    const layer = this.layer('ok')
    const configured = name in this.values
    return { name, configured, source: configured ? layer : undefined, shadowed: [], layers: [layer] }
  }
  async set(): Promise<void> {
    throw new CredentialError('READ_ONLY', 'the fixed table is read-only')
  }
  async unset(): Promise<void> {
    throw new CredentialError('READ_ONLY', 'the fixed table is read-only')
  }
}

describe('ctx.credentials', () => {
  it('require() returns a present value and names every layer for a missing one', async () => {
    const ctx = new Context()
    await ctx.plugin(FixedCredentials, { A_KEY: 'secret-a' } as never)
    expect(await ctx.credentials.require('A_KEY')).toBe('secret-a')
    const error = (await ctx.credentials.require('B_KEY', 'for service B').catch((e: unknown) => e)) as CredentialError
    expect(error).toBeInstanceOf(CredentialError)
    expect(error.code).toBe('MISSING_CREDENTIAL')
    expect(error.message).toBe(
      'missing credential B_KEY (for service B); set it in one of, highest precedence first: the fixed test table',
    )
  })

  it('validates names without echoing long input', () => {
    expect(() => checkCredentialName('OK_NAME_1')).not.toThrow()
    expect(() => checkCredentialName('1BAD')).toThrow(CredentialError)
    expect(() => checkCredentialName('x'.repeat(500) + ' ')).toThrow(/^invalid credential name .{0,90}: use/)
  })
})
