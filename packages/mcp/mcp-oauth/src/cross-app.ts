// SEP-990 cross-app access (enterprise-managed authorization), the identity-provider half: the
// user's ID token is exchanged at the IdP (RFC 8693 token exchange) for an identity assertion
// JWT authorization grant (ID-JAG) addressed to the MCP server's authorization server and naming
// the MCP server as its resource. The authorization-server half (the RFC 7523 JWT bearer grant
// with that assertion) is an ordinary token request of the SDK, prepared in oauth.ts.
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js'
import { McpAuthError, oneLine } from './errors.ts'
import type { OAuthSettings } from './settings.ts'

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
export const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag'
export const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token'

export interface AssertionRequest {
  settings: OAuthSettings
  /** What discovery found (the authorization server and the protected resource's metadata). */
  discovery: OAuthDiscoveryState | undefined
  /** The MCP server URL, the resource when its metadata names none. */
  url: string
  scope: string | undefined
  fetch: (input: string | URL, init?: RequestInit) => Promise<Response>
  scrub(text: string): string
}

/** The ID-JAG for the discovered authorization server; rejects with one McpAuthError line. */
export async function identityAssertionGrant(request: AssertionRequest): Promise<string> {
  const { settings, discovery } = request
  const audience = discovery?.authorizationServerMetadata?.issuer ?? discovery?.authorizationServerUrl
  const resource = discovery?.resourceMetadata?.resource ?? request.url
  if (!audience)
    throw new McpAuthError('failed', 'cross-app access: the authorization server of the MCP server is not known yet')
  const body = new URLSearchParams({
    grant_type: TOKEN_EXCHANGE,
    requested_token_type: ID_JAG,
    subject_token: settings.idToken ?? '',
    subject_token_type: ID_TOKEN,
    audience: String(audience),
    resource: String(resource),
  })
  if (request.scope) body.set('scope', request.scope)
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  }
  if (settings.idpClientId && settings.idpClientSecret) {
    const pair = `${encodeURIComponent(settings.idpClientId)}:${encodeURIComponent(settings.idpClientSecret)}`
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`
  } else if (settings.idpClientId) body.set('client_id', settings.idpClientId)
  let response: Response
  try {
    response = await request.fetch(settings.idpTokenUrl ?? '', { method: 'POST', headers, body })
  } catch (error) {
    throw new McpAuthError('failed', `the identity provider could not be reached (${(error as Error).message})`)
  }
  const answer = (await response.json().catch(() => undefined)) as
    | { access_token?: unknown; issued_token_type?: unknown; error?: unknown; error_description?: unknown }
    | undefined
  if (!response.ok || typeof answer?.access_token !== 'string' || answer.access_token === '') {
    const why = [answer?.error, answer?.error_description].filter((v) => typeof v === 'string').join(': ')
    throw new McpAuthError(
      'failed',
      `the identity provider refused the token exchange (HTTP ${response.status}${why ? `: ${oneLine(request.scrub(why))}` : ''})`,
    )
  }
  if (answer.issued_token_type !== undefined && answer.issued_token_type !== ID_JAG)
    throw new McpAuthError(
      'failed',
      `the identity provider issued ${JSON.stringify(answer.issued_token_type)}, not an identity assertion grant (${ID_JAG})`,
    )
  return answer.access_token
}
