// How dsh signs in to one remote MCP server: the checked `oauth` field of its `mcpServers` entry
// (@dsh/mcp-client's config.ts checks the raw field and builds this).

/**
 * How dsh signs in to a remote server that answers 401. `authorization_code` (the default) asks the
 * human through a browser, with a loopback callback; `client_credentials` is machine to machine;
 * `cross_app_access` (SEP-990, enterprise-managed) trades the user's identity-provider ID token for
 * an identity assertion grant (ID-JAG, RFC 8693 token exchange at the IdP) and that for an access
 * token (RFC 7523 JWT bearer grant at the server's authorization server), with no browser step.
 */
export interface OAuthSettings {
  grant: 'authorization_code' | 'client_credentials' | 'cross_app_access'
  /** A pre-registered client (no dynamic registration). */
  clientId?: string
  clientSecret?: string
  /** An https URL of a client ID metadata document, used as the client id where the server supports it. */
  clientMetadataUrl?: string
  /** Scopes to ask for when neither the server's challenge nor its metadata names any. */
  scope?: string
  /** Fixed loopback port of the callback (`http://127.0.0.1:PORT/callback`); default: one that is free. */
  callbackPort?: number
  /** Client credentials with a signed JWT (private_key_jwt): the PEM private key, and its algorithm. */
  privateKey?: string
  algorithm?: string
  /** Client name shown by the authorization server. */
  clientName?: string
  /** cross_app_access: the identity provider's token endpoint (https, or http on loopback). */
  idpTokenUrl?: string
  /** cross_app_access: the user's ID token from the identity provider (e.g. `${IDP_ID_TOKEN}`). */
  idToken?: string
  /** cross_app_access: dsh's client at the identity provider, when it authenticates the exchange. */
  idpClientId?: string
  idpClientSecret?: string
}
