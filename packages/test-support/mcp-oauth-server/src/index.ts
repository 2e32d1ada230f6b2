// @dsh/mcp-oauth-server: an OAuth-protected MCP server for tests, built from the official SDK's
// server-side auth helpers (`mcpAuthRouter` for the authorization server: metadata, dynamic
// registration, /authorize, /token with PKCE, and `requireBearerAuth` in front of a streamable HTTP
// MCP endpoint). One loopback port serves both. The consent step approves at once: whoever opens
// the authorization URL (a test playing the browser) is redirected to the client's redirect URI
// with a code, so the client side is exercised exactly as with a real server.
import { randomBytes, randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import type { Server as HttpServer } from 'node:http'
import express, { type Request, type Response } from 'express'
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js'
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js'
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js'
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js'
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

export interface OAuthMcpServerOptions {
  /** Scopes the MCP endpoint requires (and the metadata advertises). Default `['mcp:tools']`. */
  scopes?: string[]
  /** Lifetime of an access token in seconds (default 3600). */
  tokenLifetimeSeconds?: number
  /** Refuse every authorization (redirect with `error=access_denied`). */
  deny?: boolean
}

export interface OAuthMcpServer {
  /** The MCP endpoint (`http://127.0.0.1:PORT/mcp`). */
  url: string
  /** Authorization requests received (one per browser visit), with the scopes asked. */
  authorizations: Array<{ clientId: string; scopes: string[]; redirectUri: string }>
  /** Token requests answered, by grant. */
  tokenGrants: string[]
  /** Every access token issued, newest last (a test checks none leaks). */
  accessTokens: string[]
  /** Registered clients by id. */
  clients: Map<string, OAuthClientInformationFull>
  /** Makes every access token issued so far invalid (the next request answers 401). */
  expireAccessTokens(): void
  close(): Promise<void>
}

/** Starts the server on an ephemeral loopback port. Tools: `whoami` (the token's client and scopes) and `ask` (an elicitation). */
export async function startOAuthMcpServer(options: OAuthMcpServerOptions = {}): Promise<OAuthMcpServer> {
  const scopes = options.scopes ?? ['mcp:tools']
  const lifetime = options.tokenLifetimeSeconds ?? 3600
  const clients = new Map<string, OAuthClientInformationFull>()
  const codes = new Map<string, { client: string; params: AuthorizationParams }>()
  const tokens = new Map<string, AuthInfo>()
  const refreshTokens = new Map<string, { client: string; scopes: string[] }>()
  const authorizations: OAuthMcpServer['authorizations'] = []
  const tokenGrants: string[] = []
  const accessTokens: string[] = []
  const secret = () => randomBytes(18).toString('base64url')

  const clientsStore: OAuthRegisteredClientsStore = {
    getClient: (id) => clients.get(id),
    registerClient: (client) => {
      const full = {
        ...client,
        client_id: `client-${secret()}`,
        client_id_issued_at: Math.floor(Date.now() / 1000),
      } as OAuthClientInformationFull
      clients.set(full.client_id, full)
      return full
    },
  }
  const issue = (client: string, granted: string[]): OAuthTokens => {
    const access = `at-${secret()}`
    const refresh = `rt-${secret()}`
    tokens.set(access, {
      token: access,
      clientId: client,
      scopes: granted,
      expiresAt: Math.floor(Date.now() / 1000) + lifetime,
    })
    refreshTokens.set(refresh, { client, scopes: granted })
    accessTokens.push(access)
    return {
      access_token: access,
      token_type: 'bearer',
      expires_in: lifetime,
      refresh_token: refresh,
      scope: granted.join(' '),
    }
  }
  const provider: OAuthServerProvider = {
    get clientsStore() {
      return clientsStore
    },
    async authorize(client, params, res: Response) {
      authorizations.push({ clientId: client.client_id, scopes: params.scopes ?? [], redirectUri: params.redirectUri })
      const target = new URL(params.redirectUri)
      if (params.state !== undefined) target.searchParams.set('state', params.state)
      if (options.deny) {
        target.searchParams.set('error', 'access_denied')
        target.searchParams.set('error_description', 'the user said no')
      } else {
        const code = `code-${secret()}`
        codes.set(code, { client: client.client_id, params })
        target.searchParams.set('code', code)
      }
      res.redirect(302, target.href)
    },
    async challengeForAuthorizationCode(_client, code) {
      const entry = codes.get(code)
      if (!entry) throw new InvalidGrantError('unknown authorization code')
      return entry.params.codeChallenge
    },
    async exchangeAuthorizationCode(client, code) {
      const entry = codes.get(code)
      if (!entry || entry.client !== client.client_id) throw new InvalidGrantError('unknown authorization code')
      codes.delete(code)
      tokenGrants.push('authorization_code')
      return issue(client.client_id, entry.params.scopes?.length ? entry.params.scopes : scopes)
    },
    async exchangeRefreshToken(client, refreshToken) {
      const entry = refreshTokens.get(refreshToken)
      if (!entry || entry.client !== client.client_id) throw new InvalidGrantError('unknown refresh token')
      refreshTokens.delete(refreshToken)
      tokenGrants.push('refresh_token')
      return issue(client.client_id, entry.scopes)
    },
    async verifyAccessToken(token) {
      const info = tokens.get(token)
      if (!info || (info.expiresAt ?? 0) < Date.now() / 1000)
        throw new InvalidTokenError('the access token is unknown or expired')
      return info
    },
  }

  const app = express()
  const listening = await new Promise<HttpServer>((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server))
  })
  const base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`
  const mcpUrl = new URL('/mcp', base)
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(base),
      resourceServerUrl: mcpUrl,
      scopesSupported: scopes,
      resourceName: 'dsh test server',
    }),
  )
  const bearer = requireBearerAuth({
    verifier: provider,
    requiredScopes: scopes,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
  })

  const mcp = () => {
    const server = new Server({ name: 'dsh-oauth-test', version: '1.0.0' }, { capabilities: { tools: {} } })
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        {
          name: 'whoami',
          description: 'Says which OAuth client and scopes the call was made with.',
          inputSchema: { type: 'object', properties: {} },
        },
        {
          name: 'leak',
          description: 'Fails with an error that quotes the access token (a careless server).',
          inputSchema: { type: 'object', properties: {} },
        },
        {
          name: 'ask',
          description: 'Asks the user for a name and a colour (an elicitation) and returns the answer.',
          inputSchema: { type: 'object', properties: {} },
        },
      ],
    }))
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      if (request.params.name === 'whoami') {
        return {
          content: [
            {
              type: 'text',
              text: `client ${extra.authInfo?.clientId} with scopes ${extra.authInfo?.scopes.join(' ')}`,
            },
          ],
        }
      }
      if (request.params.name === 'leak') throw new Error(`token ${extra.authInfo?.token} is not allowed here`)
      if (request.params.name === 'ask') {
        const answer = await server.elicitInput({
          mode: 'form',
          message: 'Who are you?',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', title: 'Name' },
              colour: { type: 'string', title: 'Colour', enum: ['red', 'green'], default: 'green' },
              age: { type: 'integer', title: 'Age' },
            },
            required: ['name'],
          },
        })
        return { content: [{ type: 'text', text: `elicitation: ${JSON.stringify(answer)}` }] }
      }
      return { content: [{ type: 'text', text: `unknown tool ${request.params.name}` }], isError: true }
    })
    return server
  }
  // Sessions (the elicitation's answer comes back on another request of the same session).
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const route = async (req: Request, res: Response) => {
    const id = req.headers['mcp-session-id']
    let transport = typeof id === 'string' ? sessions.get(id) : undefined
    if (!transport) {
      if (req.method !== 'POST' || typeof id === 'string') {
        res.status(404).json({ jsonrpc: '2.0', error: { code: -32001, message: 'unknown session' }, id: null })
        return
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, created),
      })
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId)
      }
      await mcp().connect(created)
      transport = created
    }
    await transport.handleRequest(req, res, req.body)
  }
  app.post('/mcp', express.json(), bearer, route)
  app.get('/mcp', bearer, route)
  app.delete('/mcp', bearer, route)

  return {
    url: mcpUrl.href,
    authorizations,
    tokenGrants,
    accessTokens,
    clients,
    expireAccessTokens() {
      for (const info of tokens.values()) info.expiresAt = 0
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const transport of sessions.values()) void transport.close()
        listening.closeAllConnections?.()
        listening.close(() => resolve())
      }),
  }
}
