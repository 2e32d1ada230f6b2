// The browser sign-in end to end, in process: McpOAuth's fetch under the official SDK's client
// against @dsh/mcp-oauth-server (the SDK's own server-side auth: discovery, dynamic registration,
// PKCE, refresh). The human is a @dsh/user-questions answerer that opens the address it is shown
// and follows the redirect to dsh's loopback callback; sign-in state goes through layeredStore to
// @dsh/credentials-local (a temp home, 0600 file). SignIns is the host side: the question, the
// one stderr line of a run without a human, and `dsh mcp login`'s printed address.
import { mkdtempSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import { createPrivateKeyJwtAuth } from '@modelcontextprotocol/sdk/client/auth-extensions.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import UserQuestions, { type QuestionsRequest } from '@dsh/user-questions'
import CredentialsLocal from '@dsh/credentials-local'
import { startOAuthMcpServer, type OAuthMcpServer } from '@dsh/mcp-oauth-server'
import { type AuthStore, layeredStore, McpAuthError, McpOAuth, SignIns, storeKey } from '../src/index.ts'

/** Opens an address and follows its redirects (to dsh's callback), as a browser would. */
async function browse(address: string): Promise<void> {
  let next: string | undefined = address
  for (let hop = 0; hop < 5 && next; hop++) {
    const response: Response = await fetch(next, { redirect: 'manual' })
    await response.body?.cancel()
    const location = response.headers.get('location')
    next = location ? new URL(location, next).href : undefined
  }
}

const sdk = { auth, extractWWWAuthenticateParams, createPrivateKeyJwtAuth }
let server: OAuthMcpServer
let home: string
let ctx: Context
const asked: QuestionsRequest[] = []
let human = true
beforeAll(async () => {
  server = await startOAuthMcpServer({ scopes: ['mcp:tools'] })
  home = mkdtempSync(join(tmpdir(), 'dsh-mcp-oauth-sign-in-'))
  ctx = new Context()
  await ctx.plugin(UserQuestions, {} as never)
  await ctx.plugin(CredentialsLocal, { home, cwd: home, checkAtStart: false })
  ctx.userQuestions.registerAnswerer({
    name: 'test-human',
    answer: (request) => {
      if (!human) return undefined as never
      asked.push(request)
      void browse(request.questions[0].question.split('\n').at(-1)!)
      return { signin: { selected: ['I will open it myself'] } }
    },
  })
})
afterAll(async () => {
  await server?.close()
})

function signIns(told: string[] = []) {
  return new SignIns({
    questions: () => (human ? ctx.userQuestions : undefined),
    open: () => {},
    waitMs: () => 10_000,
    tell: (line) => told.push(line),
  })
}

/** One connection: an SDK client whose transport sends through a fresh McpOAuth. */
async function connect(store: AuthStore, desk: SignIns) {
  const oauth = new McpOAuth({
    server: 'srv',
    url: server.url,
    settings: { grant: 'authorization_code' },
    store,
    sdk,
    consent: (request) => desk.consent(request),
    waitMs: 10_000,
    maxAttempts: 3,
  })
  const client = new Client({ name: 'test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { fetch: oauth.wrap() }))
  const call = async (name: string) => {
    const result = await client.callTool({ name, arguments: {} })
    return (result.content as Array<{ text?: string }>).map((b) => b.text ?? '').join('\n')
  }
  return { oauth, call, close: () => client.close().finally(() => oauth.close()) }
}

describe('@dsh/mcp-oauth browser sign-in', () => {
  it('asks once, signs in through the loopback callback, stores 0600, refreshes, and never leaks a token', async () => {
    const warnings: string[] = []
    const store = layeredStore(
      () => ctx.credentials,
      (message) => warnings.push(message),
    )
    const first = await connect(store, signIns())
    expect(asked).toHaveLength(1)
    expect(asked[0].questions[0].question).toContain('MCP server "srv" needs you to sign in')
    expect(server.authorizations).toHaveLength(1)
    expect(server.authorizations[0]).toMatchObject({ scopes: ['mcp:tools'] })
    expect(server.authorizations[0].redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/)
    expect(await first.call('whoami')).toBe(`client ${server.authorizations[0].clientId} with scopes mcp:tools`)
    await first.close()

    const file = join(home, '.credentials.yaml')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const stored = readFileSync(file, 'utf8')
    expect(stored).toContain(storeKey('srv', server.url))
    expect(stored).toContain(server.accessTokens.at(-1)!)

    // No human now: the stored token is enough, and an expired one is refreshed without asking.
    human = false
    const second = await connect(store, signIns())
    server.expireAccessTokens()
    expect(await second.call('whoami')).toMatch(/^client client-/)
    expect(server.tokenGrants).toEqual(['authorization_code', 'refresh_token'])
    expect(server.authorizations).toHaveLength(1)
    // A server error quoting the token is scrubbed by the flow that knows it.
    const leaked = await second.call('leak').catch((error: Error) => error.message)
    expect(leaked).toContain(server.accessTokens.at(-1)!)
    expect(second.oauth.scrub(leaked)).toContain('token [redacted] is not allowed here')
    for (const token of server.accessTokens) expect(second.oauth.scrub(leaked)).not.toContain(token)
    await second.close()
    expect(warnings).toEqual([])
    human = true
  })

  it('without a human: the sign-in fails as no-human, and a run is told once to use dsh mcp login', async () => {
    human = false
    const told: string[] = []
    const desk = signIns(told)
    const failed = await connect(
      layeredStore(
        () => undefined,
        () => {},
      ),
      desk,
    ).then(
      () => undefined,
      (error: unknown) => {
        for (let e = error; e instanceof Error; e = e.cause) if (e instanceof McpAuthError) return e
        return error
      },
    )
    expect(failed).toBeInstanceOf(McpAuthError)
    expect((failed as McpAuthError).reason).toBe('no-human')
    expect((failed as McpAuthError).message).toBe(
      'it needs you to sign in (OAuth) and no human is at hand; run "dsh mcp login srv"',
    )
    const waiting = {
      name: 'srv',
      status: () => ({ signIn: 'needed' as const }),
      settled: async () => {},
      restart: () => {},
      logout: async () => true,
    }
    await desk.waiting('s1', [waiting])
    await desk.waiting('s1', [waiting])
    expect(told).toEqual([
      'dsh: MCP server "srv" needs you to sign in (OAuth) and no human is at hand; run "dsh mcp login srv" once, then its tools are available\n',
    ])
    human = true
  })

  it('login shows the address instead of asking, and refuses another server meanwhile', async () => {
    const desk = signIns()
    const shown: string[] = []
    const before = asked.length
    let other: unknown
    const connection = {
      name: 'srv',
      status: () => ({}),
      logout: async () => true,
      restart: () => {
        void desk
          .consent({ server: 'other', url: new URL('http://127.0.0.1/x'), signal: new AbortController().signal })
          .catch((error: unknown) => (other = error))
        void desk.consent({
          server: 'srv',
          url: new URL('http://127.0.0.1/authorize?x=1'),
          signal: new AbortController().signal,
        })
      },
      settled: () => new Promise<void>((resolve) => setImmediate(resolve)),
    }
    await desk.login(connection, (url) => shown.push(url))
    expect(shown).toEqual(['http://127.0.0.1/authorize?x=1'])
    expect((other as McpAuthError).message).toBe('another server is signing in')
    expect(asked.length).toBe(before)
  })
})
