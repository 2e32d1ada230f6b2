// SEP-990 cross-app access end to end, in process: McpOAuth's fetch under the official SDK's
// client (no human at hand) against an MCP server on the official SDK behind a bearer check,
// its authorization server (the RFC 7523 JWT bearer grant, client_secret_basic) and an enterprise
// identity provider (the RFC 8693 token exchange of an ID token for an ID-JAG). The two OAuth
// servers cannot be reached on this machine for real: they are small loopback servers speaking
// the wire format of those RFCs, checking every parameter the conformance suite checks.
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import { createPrivateKeyJwtAuth } from '@modelcontextprotocol/sdk/client/auth-extensions.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { McpAuthError, McpOAuth, memoryStore, type OAuthSettings } from '../src/index.ts'

const CLIENT = 'dsh-xaa'
const SECRET = 'xaa-client-secret'
const ID_TOKEN = `idtoken-${randomBytes(8).toString('hex')}`

async function listen(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<{
  http: HttpServer
  url: string
}> {
  const http = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', () => handler(req, res, body))
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  return { http, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` }
}

const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify(value))
}

let idp: Awaited<ReturnType<typeof listen>>
let as: Awaited<ReturnType<typeof listen>>
let rs: Awaited<ReturnType<typeof listen>>
/** ID-JAGs the IdP issued, with what they were issued for. */
const grants = new Map<string, { audience: string; resource: string; subject: string }>()
const exchanges: Array<Record<string, string>> = []
const bearerGrants: Array<Record<string, string>> = []
const accessTokens = new Map<string, string>()

beforeAll(async () => {
  idp = await listen((_req, res, body) => {
    const p = Object.fromEntries(new URLSearchParams(body))
    exchanges.push(p)
    if (p.grant_type !== 'urn:ietf:params:oauth:grant-type:token-exchange')
      return json(res, 400, { error: 'unsupported_grant_type' })
    if (
      p.subject_token_type !== 'urn:ietf:params:oauth:token-type:id_token' ||
      p.requested_token_type !== 'urn:ietf:params:oauth:token-type:id-jag' ||
      !p.audience ||
      !p.resource
    )
      return json(res, 400, { error: 'invalid_request', error_description: 'missing parameters' })
    if (p.subject_token !== ID_TOKEN)
      return json(res, 400, { error: 'invalid_grant', error_description: `unknown ID token ${p.subject_token}` })
    const jag = `jag-${randomBytes(8).toString('hex')}`
    grants.set(jag, { audience: p.audience, resource: p.resource, subject: 'alice@example.com' })
    json(res, 200, {
      access_token: jag,
      issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
      token_type: 'N_A',
    })
  })
  as = await listen((req, res, body) => {
    if (req.url === '/.well-known/oauth-authorization-server')
      return json(res, 200, {
        issuer: as.url,
        token_endpoint: `${as.url}/token`,
        authorization_endpoint: `${as.url}/authorize`,
        response_types_supported: ['code'],
        grant_types_supported: ['urn:ietf:params:oauth:grant-type:jwt-bearer'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
      })
    if (req.url !== '/token') return json(res, 404, { error: 'not_found' })
    const p = Object.fromEntries(new URLSearchParams(body))
    bearerGrants.push({ ...p, authorization: req.headers.authorization ?? '' })
    const basic = `Basic ${Buffer.from(`${CLIENT}:${SECRET}`).toString('base64')}`
    if (req.headers.authorization !== basic) return json(res, 401, { error: 'invalid_client' })
    if (p.grant_type !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
      return json(res, 400, { error: 'unsupported_grant_type' })
    const grant = grants.get(p.assertion ?? '')
    if (!grant || grant.audience !== as.url || grant.resource !== `${rs.url}/mcp`)
      return json(res, 400, { error: 'invalid_grant', error_description: 'the assertion is not for this server' })
    const token = `at-${randomBytes(8).toString('hex')}`
    accessTokens.set(token, grant.subject)
    json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 })
  })
  rs = await listen((req, res, body) => {
    const metadata = `${rs.url}/.well-known/oauth-protected-resource/mcp`
    if (req.url === '/.well-known/oauth-protected-resource/mcp')
      return json(res, 200, { resource: `${rs.url}/mcp`, authorization_servers: [as.url] })
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]
    const user = token ? accessTokens.get(token) : undefined
    if (!user)
      return json(
        res,
        401,
        { error: 'invalid_token' },
        { 'www-authenticate': `Bearer resource_metadata="${metadata}"` },
      )
    // Stateless: one SDK server and transport per request.
    const server = new Server({ name: 'xaa-fixture', version: '1.0.0' }, { capabilities: { tools: {} } })
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: 'whoami', description: 'Who the token speaks for.', inputSchema: { type: 'object' } }],
    }))
    server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: `you are ${user}` }] }))
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    void server.connect(transport).then(() => transport.handleRequest(req, res, body ? JSON.parse(body) : undefined))
  })
})

afterAll(async () => {
  for (const s of [idp, as, rs]) {
    s?.http.closeAllConnections()
    await new Promise((resolve) => s?.http.close(resolve))
  }
})

/** An SDK client whose transport sends through McpOAuth's fetch (as @dsh/mcp-client wires it). */
async function connect(idToken: string) {
  const settings: OAuthSettings = {
    grant: 'cross_app_access',
    clientId: CLIENT,
    clientSecret: SECRET,
    idpTokenUrl: `${idp.url}/token`,
    idToken,
    scope: 'mcp:tools',
  }
  const oauth = new McpOAuth({
    server: 'srv',
    url: `${rs.url}/mcp`,
    settings,
    store: memoryStore(),
    sdk: { auth, extractWWWAuthenticateParams, createPrivateKeyJwtAuth },
    consent: async () => {
      throw new McpAuthError('no-human', 'cross-app access asks nobody')
    },
    waitMs: 10_000,
    maxAttempts: 3,
  })
  const client = new Client({ name: 'test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${rs.url}/mcp`), { fetch: oauth.wrap() })
  await client.connect(transport)
  return { client, oauth }
}

/** The sign-in failure behind an error (the SDK may wrap what the fetch threw). */
function authError(error: unknown): McpAuthError | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof McpAuthError) return e
  return undefined
}

describe('@dsh/mcp-oauth cross-app access (SEP-990)', () => {
  it('trades the ID token for an ID-JAG and that for an access token, with no human; a refused exchange fails in one line', async () => {
    const { client, oauth } = await connect(ID_TOKEN)
    const result = await client.callTool({ name: 'whoami', arguments: {} })
    expect(result.content).toEqual([{ type: 'text', text: 'you are alice@example.com' }])
    // The exchange named the discovered authorization server and the protected resource.
    expect(exchanges.find((e) => e.subject_token === ID_TOKEN)).toMatchObject({
      subject_token: ID_TOKEN,
      audience: as.url,
      resource: `${rs.url}/mcp`,
      scope: 'mcp:tools',
    })
    expect(bearerGrants.find((g) => g.authorization.startsWith('Basic '))).toMatchObject({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: expect.stringMatching(/^jag-/),
    })
    await client.close()
    oauth.close()

    const failed = await connect('idtoken-revoked-0123').then(
      () => undefined,
      (error: unknown) => authError(error),
    )
    expect(failed?.reason).toBe('failed')
    expect(failed?.message).toBe(
      'the identity provider refused the token exchange (HTTP 400: invalid_grant: unknown ID token [redacted])',
    )
  })
})
