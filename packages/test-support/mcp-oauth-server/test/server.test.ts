// The stand-in's own contract, over plain HTTP: the MCP endpoint refuses a request without a token
// and points at its protected-resource metadata, which names the authorization server; expired
// tokens are refused too. (mcp-client's tests drive the full sign-in through the SDK.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startOAuthMcpServer, type OAuthMcpServer } from '../src/index.ts'

let server: OAuthMcpServer
beforeAll(async () => {
  server = await startOAuthMcpServer({ scopes: ['mcp:tools', 'mcp:extra'] })
})
afterAll(async () => {
  await server.close()
})

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } },
}

describe('mcp-oauth-server', () => {
  it('answers 401 without a token, with WWW-Authenticate naming its resource metadata', async () => {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(initialize),
    })
    expect(response.status).toBe(401)
    const challenge = response.headers.get('www-authenticate') ?? ''
    expect(challenge).toMatch(/^Bearer /)
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1]
    expect(metadataUrl).toBeDefined()
    const metadata = (await (await fetch(metadataUrl!)).json()) as {
      resource: string
      authorization_servers: string[]
      scopes_supported?: string[]
    }
    expect(metadata.resource).toBe(server.url)
    expect(metadata.authorization_servers.length).toBeGreaterThan(0)
    expect(metadata.scopes_supported).toEqual(['mcp:tools', 'mcp:extra'])
    expect(server.authorizations).toEqual([])
  })

  it('refuses a token it never issued', async () => {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: 'Bearer not-a-token-it-issued',
      },
      body: JSON.stringify(initialize),
    })
    expect(response.status).toBe(401)
  })
})
