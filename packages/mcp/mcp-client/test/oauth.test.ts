// OAuth sign-in and elicitation against @dsh/mcp-oauth-server (the SDK's own server-side auth),
// in process: the real client, user-questions, credentials-local (a temp home) and subprocess.
// The human is a user-questions answerer that opens the sign-in URL it is shown (fetch, then the
// redirect to dsh's loopback callback) and fills forms.
import { mkdtempSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { ToolRegistry } from '@dsh/tools'
import SubprocessLocal from '@dsh/subprocess-local'
import UserQuestions, { type QuestionAnswer, type QuestionsRequest } from '@dsh/user-questions'
import CredentialsLocal from '@dsh/credentials-local'
import { startOAuthMcpServer, type OAuthMcpServer } from '@dsh/mcp-oauth-server'
import McpClient, { checkServer, storeKey } from '../src/index.ts'

type Human = (request: QuestionsRequest) => Record<string, QuestionAnswer>

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

const browserHuman: Human = (request) => {
  const question = request.questions[0]
  if (question.id !== 'signin') throw new Error(`unexpected question ${question.id}`)
  void browse(question.question.split('\n').at(-1)!)
  return { signin: { selected: ['I will open it myself'] } }
}

async function boot(options: { url: string; home: string; human?: Human; oauth?: unknown; browser?: string[] }) {
  const ctx = new Context()
  await ctx.plugin(ToolRegistry, {} as never)
  await ctx.plugin(SubprocessLocal, {} as never)
  await ctx.plugin(UserQuestions, {} as never)
  await ctx.plugin(CredentialsLocal, { home: options.home, cwd: options.home, checkAtStart: false })
  const asked: QuestionsRequest[] = []
  if (options.human) {
    const human = options.human
    ctx.userQuestions.registerAnswerer({
      name: 'test-human',
      answer: (request) => {
        asked.push(request)
        return human(request)
      },
    })
  }
  const notices: string[] = []
  ctx.on('mcp/status', (_status, notice) => {
    if (notice) notices.push(notice)
  })
  const fork = ctx.plugin(McpClient, {
    servers: { srv: { url: options.url, ...(options.oauth !== undefined ? { oauth: options.oauth } : {}) } },
    projectFile: false,
    userSettings: false,
    authWaitMs: 10_000,
    ...(options.browser ? { browser: options.browser } : {}),
    retry: { initialDelayMs: 50, maxDelayMs: 100, maxAttempts: 3, stableMs: 30_000 },
  })
  await fork
  await ctx.mcp.ready(undefined, Number.POSITIVE_INFINITY)
  const call = async (tool: string) => {
    const result = await ctx.tools.execute(
      { callId: `c-${tool}`, name: `mcp__srv__${tool}`, arguments: '{}' },
      { cwd: options.home },
    )
    return result.message.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n')
  }
  return { ctx, asked, notices, call, status: () => ctx.mcp.get('srv')!, dispose: () => fork.dispose() }
}

let server: OAuthMcpServer
let home: string
beforeAll(async () => {
  server = await startOAuthMcpServer({ scopes: ['mcp:tools'] })
  home = mkdtempSync(join(tmpdir(), 'dsh-mcp-oauth-'))
})
afterAll(async () => {
  await server?.close()
})

describe('@dsh/mcp-client OAuth sign-in', () => {
  it('asks the human once, signs in through the loopback callback and stores the tokens 0600; the next start asks nobody', async () => {
    const first = await boot({ url: server.url, home, human: browserHuman })
    expect(first.status()).toMatchObject({
      state: 'connected',
      tools: ['mcp__srv__ask', 'mcp__srv__leak', 'mcp__srv__whoami'],
    })
    expect(first.asked).toHaveLength(1)
    expect(first.asked[0].questions[0].question).toContain('MCP server "srv" needs you to sign in')
    expect(server.authorizations).toHaveLength(1)
    // PKCE and the advertised scope; the redirect is dsh's loopback callback.
    expect(server.authorizations[0]).toMatchObject({ scopes: ['mcp:tools'] })
    expect(server.authorizations[0].redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/)
    expect(await first.call('whoami')).toBe(`client ${server.authorizations[0].clientId} with scopes mcp:tools`)
    await first.dispose()

    const file = join(home, '.credentials.yaml')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const stored = readFileSync(file, 'utf8')
    expect(stored).toContain(storeKey('srv', server.url))
    expect(stored).toContain(server.accessTokens.at(-1)!)

    // No human now: the stored token is enough.
    const second = await boot({ url: server.url, home })
    expect(second.status().state).toBe('connected')
    expect(server.authorizations).toHaveLength(1)
    // An expired token is refreshed, without asking.
    server.expireAccessTokens()
    expect(await second.call('whoami')).toMatch(/^client client-/)
    expect(server.tokenGrants).toEqual(['authorization_code', 'refresh_token'])
    expect(server.authorizations).toHaveLength(1)
    // A server error quoting the token reaches the model with the token replaced.
    const leaked = await second.call('leak')
    expect(leaked).toContain('token [redacted] is not allowed here')
    for (const token of server.accessTokens) expect(leaked).not.toContain(token)
    await second.dispose()
  })

  it('"Open the browser" runs the browser command with the address (through ctx.subprocess)', async () => {
    // The "browser" is a node script that opens the address it is given and follows the redirects.
    const browser = [
      process.execPath,
      '-e',
      'let u=process.argv[1];(async()=>{for(let i=0;i<5&&u;i++){const r=await fetch(u,{redirect:"manual"});const l=r.headers.get("location");u=l?new URL(l,u).href:undefined}})()',
    ]
    const h = await boot({
      url: server.url,
      home: mkdtempSync(join(tmpdir(), 'dsh-mcp-oauth-open-')),
      browser,
      human: () => ({ signin: { selected: ['Open the browser'] } }),
    })
    expect(h.status().state).toBe('connected')
    expect(h.asked).toHaveLength(1)
    await h.dispose()
  })

  it('without a human: failed at once (no retries) with signIn needed and a line naming dsh mcp login', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'dsh-mcp-oauth-none-'))
    const before = server.authorizations.length
    const h = await boot({ url: server.url, home: fresh })
    expect(h.status()).toMatchObject({ state: 'failed', signIn: 'needed', failures: 1 })
    expect(h.status().error).toContain('run "dsh mcp login srv"')
    expect(server.authorizations.length).toBe(before)
    await h.dispose()
  })

  it("a refused consent fails the server at once with the authorization server's reason", async () => {
    const denying = await startOAuthMcpServer({ deny: true })
    try {
      const h = await boot({
        url: denying.url,
        home: mkdtempSync(join(tmpdir(), 'dsh-mcp-oauth-deny-')),
        human: browserHuman,
      })
      expect(h.status()).toMatchObject({ state: 'failed', failures: 1 })
      expect(h.status().error).toMatch(/refused the sign-in: access_denied \(the user said no\)/)
      expect(h.status().signIn).toBeUndefined()
      expect(denying.authorizations).toHaveLength(1)
      await h.dispose()
    } finally {
      await denying.close()
    }
  })

  it('oauth: false never signs in: a 401 is an ordinary failure', async () => {
    const before = server.authorizations.length
    const h = await boot({
      url: server.url,
      home: mkdtempSync(join(tmpdir(), 'dsh-mcp-oauth-off-')),
      human: browserHuman,
      oauth: false,
    })
    // Retried like any failed connection (no sign-in, no question).
    expect(h.status()).toMatchObject({ state: 'retrying', failures: 1 })
    expect(h.status().error).toMatch(/invalid_token/)
    expect(h.asked).toHaveLength(0)
    expect(server.authorizations.length).toBe(before)
    await h.dispose()
  })
})

describe('@dsh/mcp-client elicitation', () => {
  it('asks a form through user questions and returns the typed answers, defaults filled in', async () => {
    const h = await boot({
      url: server.url,
      home,
      human: (request) => {
        expect(request.questions.map((q) => q.id)).toEqual(['mcp_action', 'field_name', 'field_colour', 'field_age'])
        expect(request.questions[2].options?.map((o) => o.label)).toEqual(['red', 'green'])
        return {
          mcp_action: { selected: ['Submit'] },
          field_name: { selected: [], text: 'Ada' },
          field_age: { selected: [], text: '36' },
        }
      },
    })
    expect(await h.call('ask')).toBe(
      'elicitation: {"action":"accept","content":{"name":"Ada","age":36,"colour":"green"}}',
    )
    expect(h.asked).toHaveLength(1)
    await h.dispose()
  })

  it('a number that does not parse declines the form and says why', async () => {
    const h = await boot({
      url: server.url,
      home,
      human: () => ({
        mcp_action: { selected: ['Submit'] },
        field_name: { selected: [], text: 'Ada' },
        field_age: { selected: [], text: 'old' },
      }),
    })
    expect(await h.call('ask')).toBe('elicitation: {"action":"decline"}')
    expect(h.notices.some((n) => n.includes('declined: "age" must be an integer, got "old"'))).toBe(true)
    await h.dispose()
  })

  it('without a human it declines and says so', async () => {
    const h = await boot({ url: server.url, home })
    expect(h.status().state).toBe('connected')
    expect(await h.call('ask')).toBe('elicitation: {"action":"decline"}')
    expect(h.notices).toContain(
      'MCP server "srv" asked for input ("Who are you?"); declined: no human is at hand to answer.',
    )
    await h.dispose()
  })
})

describe('oauth settings in a server entry', () => {
  const check = (oauth: unknown) =>
    checkServer(
      's',
      { url: 'https://h/mcp', oauth },
      { source: 'config', origin: 'config', cwd: '/', env: { SECRET: 'shh' } },
    )
  it('accepts the documented shapes and expands variables', () => {
    expect(check(undefined)).toMatchObject({ spec: { oauth: { grant: 'authorization_code' } } })
    expect(check(false)).toMatchObject({ spec: { oauth: false } })
    expect(check({ grant: 'client_credentials', clientId: 'c', clientSecret: '${SECRET}' })).toMatchObject({
      spec: { oauth: { grant: 'client_credentials', clientId: 'c', clientSecret: 'shh' } },
    })
  })
  it.each([
    ['nope', '"oauth" must be false or an object'],
    [
      { grant: 'password' },
      '"oauth.grant" must be authorization_code, client_credentials or cross_app_access, not "password"',
    ],
    [{ callbackPort: 70000 }, '"oauth.callbackPort" must be a port number (1-65535)'],
    [{ clientSecret: 'x' }, '"oauth.clientSecret" needs "oauth.clientId"'],
    [{ tokenUrl: 'x' }, '"oauth.tokenUrl" is not a known setting'],
    [{ clientMetadataUrl: 'http://h/doc.json' }, '"oauth.clientMetadataUrl" must be an https URL with a path'],
    [{ grant: 'client_credentials', clientId: 'c' }, 'needs "oauth.clientSecret" or "oauth.privateKey"'],
    [{ clientId: '${UNSET_VARIABLE}' }, 'uses ${UNSET_VARIABLE}, which is not set'],
    [
      { grant: 'cross_app_access', clientId: 'c', clientSecret: 's' },
      '"oauth.grant: cross_app_access" needs "oauth.idpTokenUrl" and "oauth.idToken"',
    ],
    [
      {
        grant: 'cross_app_access',
        clientId: 'c',
        clientSecret: 's',
        idpTokenUrl: 'http://idp.example/token',
        idToken: 't',
      },
      '"oauth.idpTokenUrl" must be an https URL (http only on a loopback host)',
    ],
    [{ idToken: 't' }, '"oauth.idToken" is only used with "oauth.grant: cross_app_access"'],
  ])('refuses %j with one line', (oauth, reason) => {
    const checked = check(oauth)
    expect('invalid' in checked && checked.invalid).toContain(reason)
  })
})
