// OAuth 2.1 for remote MCP servers, through the official SDK's `auth()` and its
// `OAuthClientProvider` interface: the SDK does the protocol (protected-resource and
// authorization-server discovery with their fallbacks, dynamic registration or a client ID
// metadata document, PKCE, scope selection, token endpoint authentication, refresh); this file
// supplies what a provider must: where state is kept (the credentials seam), the loopback
// callback that receives the code, the human (through the host's consent function), and a fetch
// wrapper that answers 401 and 403 `insufficient_scope` with a bounded number of sign-ins. The
// loopback callback is callback.ts, the state store store.ts, SEP-990's IdP half cross-app.ts.
//
// Secrets (tokens, client secrets, codes, verifiers) never leave through an error or a log line:
// `scrub()` replaces every one this flow has seen, and every failure is reported through it.
import { randomBytes } from 'node:crypto'
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { CALLBACK_PATH, CallbackServer } from './callback.ts'
import { identityAssertionGrant, JWT_BEARER } from './cross-app.ts'
import { type ConsentRequest, McpAuthError, oneLine } from './errors.ts'
import type { OAuthSettings } from './settings.ts'
import { type AuthStore, type StoredAuth, storeKey } from './store.ts'

/** The auth half of the SDK, as the host loaded it (@dsh/mcp-client loads the SDK on first use). */
export interface AuthSdk {
  auth: typeof import('@modelcontextprotocol/sdk/client/auth.js').auth
  extractWWWAuthenticateParams: typeof import('@modelcontextprotocol/sdk/client/auth.js').extractWWWAuthenticateParams
  createPrivateKeyJwtAuth: typeof import('@modelcontextprotocol/sdk/client/auth-extensions.js').createPrivateKeyJwtAuth
}

export interface OAuthOptions {
  server: string
  url: string
  settings: OAuthSettings
  store: AuthStore
  sdk: AuthSdk
  /** Shows the authorization URL to a human; resolves once shown, rejects (McpAuthError) when nobody can or will. */
  consent(request: ConsentRequest): Promise<void>
  /** How long to wait for the browser to come back to the callback. */
  waitMs: number
  /** Sign-ins one request may trigger (401 and 403 insufficient_scope together). */
  maxAttempts: number
  /** The fetch OAuth requests and the wrapped requests go through. */
  fetch?: FetchLike
}

/** The grant a machine client registers for (client metadata `grant_types`). */
const machineGrant = (grant: OAuthSettings['grant']) =>
  grant === 'cross_app_access' ? JWT_BEARER : 'client_credentials'

/**
 * One server's OAuth: the provider the SDK's `auth()` drives, and the fetch wrapper the transport
 * sends through. State is read from the store once and written through on every change.
 */
export class McpOAuth {
  readonly provider: OAuthClientProvider
  private state?: StoredAuth
  private loaded?: Promise<StoredAuth>
  private readonly key: string
  private readonly callback: CallbackServer
  private verifier?: string
  private oauthState?: string
  private authorizationUrl?: URL
  /** Every secret value seen, for `scrub()`. */
  private readonly secrets = new Set<string>()
  private signingIn?: Promise<void>
  private closed = false

  constructor(private readonly options: OAuthOptions) {
    this.key = storeKey(options.server, options.url)
    this.callback = new CallbackServer(options.server)
    const settings = options.settings
    if (settings.clientSecret) this.secrets.add(settings.clientSecret)
    if (settings.privateKey) this.secrets.add(settings.privateKey)
    if (settings.idToken) this.secrets.add(settings.idToken)
    if (settings.idpClientSecret) this.secrets.add(settings.idpClientSecret)
    this.provider = settings.grant === 'authorization_code' ? this.browserProvider() : this.machineProvider()
  }

  /** Replaces every secret this flow has seen by `[redacted]`. */
  scrub(text: string): string {
    let out = text
    for (const secret of this.secrets) if (secret.length >= 4) out = out.split(secret).join('[redacted]')
    return out
  }

  close(): void {
    this.closed = true
    this.callback.close()
  }

  /** Forgets the stored sign-in (tokens, registration, discovery). */
  async logout(): Promise<void> {
    this.state = { url: this.options.url }
    await this.options.store.save(this.key, undefined)
  }

  private async load(): Promise<StoredAuth> {
    if (this.state) return this.state
    this.loaded ??= this.options.store.load(this.key).then(
      (stored) => {
        const state = stored && stored.url === this.options.url ? stored : { url: this.options.url }
        this.remember(state)
        this.state ??= state
        return this.state
      },
      () => (this.state ??= { url: this.options.url }),
    )
    return this.loaded
  }

  private remember(state: StoredAuth): void {
    for (const value of [
      state.tokens?.access_token,
      state.tokens?.refresh_token,
      state.tokens?.id_token,
      (state.client as { client_secret?: string } | undefined)?.client_secret,
    ]) {
      if (value) this.secrets.add(value)
    }
  }

  private async update(change: (state: StoredAuth) => void): Promise<void> {
    const state = await this.load()
    change(state)
    this.remember(state)
    await this.options.store.save(this.key, state)
  }

  private get redirectUrl(): string | undefined {
    return this.callback.port === undefined ? undefined : `http://127.0.0.1:${this.callback.port}${CALLBACK_PATH}`
  }

  private clientMetadata(): OAuthClientMetadata {
    const settings = this.options.settings
    const machine = settings.grant !== 'authorization_code'
    return {
      client_name: settings.clientName ?? 'dsh',
      redirect_uris: machine || !this.redirectUrl ? [] : [this.redirectUrl],
      grant_types: machine ? [machineGrant(settings.grant)] : ['authorization_code', 'refresh_token'],
      response_types: machine ? [] : ['code'],
      ...(settings.scope ? { scope: settings.scope } : {}),
    }
  }

  private configuredClient(): OAuthClientInformationMixed | undefined {
    const { clientId, clientSecret } = this.options.settings
    return clientId ? { client_id: clientId, ...(clientSecret ? { client_secret: clientSecret } : {}) } : undefined
  }

  private common() {
    return {
      clientInformation: async () => {
        const configured = this.configuredClient()
        if (configured) return configured
        const client = (await this.load()).client
        if (!client) return undefined
        // A registration names its redirect URI: one for another port is registered again.
        const uris = (client as { redirect_uris?: string[] }).redirect_uris
        if (
          client.client_id !== this.options.settings.clientMetadataUrl &&
          Array.isArray(uris) &&
          this.redirectUrl &&
          !uris.includes(this.redirectUrl)
        )
          return undefined
        return client
      },
      saveClientInformation: async (client: OAuthClientInformationMixed) => {
        if (this.configuredClient()) return
        await this.update((state) => {
          state.client = client
          state.port = this.callback.port
        })
      },
      tokens: async () => (await this.load()).tokens,
      saveTokens: async (tokens: OAuthTokens) => {
        await this.update((state) => (state.tokens = tokens))
      },
      invalidateCredentials: async (scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') => {
        if (scope === 'verifier') return void (this.verifier = undefined)
        await this.update((state) => {
          if (scope === 'all' || scope === 'tokens') delete state.tokens
          if (scope === 'all' || scope === 'client') delete state.client
          if (scope === 'all' || scope === 'discovery') delete state.discovery
        })
      },
      discoveryState: async () => (await this.load()).discovery,
      saveDiscoveryState: async (discovery: OAuthDiscoveryState) => {
        await this.update((state) => (state.discovery = discovery))
      },
    }
  }

  private browserProvider(): OAuthClientProvider {
    const self = this
    return {
      ...this.common(),
      get redirectUrl() {
        return self.redirectUrl
      },
      get clientMetadataUrl() {
        return self.options.settings.clientMetadataUrl
      },
      get clientMetadata() {
        return self.clientMetadata()
      },
      state: () => {
        this.oauthState = randomBytes(16).toString('base64url')
        return this.oauthState
      },
      redirectToAuthorization: (url: URL) => {
        // Ask for a refresh token where the authorization server offers one (`offline_access`).
        const offered = this.state?.discovery?.authorizationServerMetadata?.scopes_supported
        const scopes = (url.searchParams.get('scope') ?? '').split(' ').filter(Boolean)
        if (offered?.includes('offline_access') && scopes.length > 0 && !scopes.includes('offline_access'))
          url.searchParams.set('scope', [...scopes, 'offline_access'].join(' '))
        this.authorizationUrl = url
      },
      saveCodeVerifier: (verifier: string) => {
        this.verifier = verifier
        this.secrets.add(verifier)
      },
      codeVerifier: () => {
        if (!this.verifier) throw new McpAuthError('failed', 'no sign-in is in progress (no PKCE verifier)')
        return this.verifier
      },
    }
  }

  private machineProvider(): OAuthClientProvider {
    const settings = this.options.settings
    const jwt = settings.privateKey
      ? this.options.sdk.createPrivateKeyJwtAuth({
          issuer: settings.clientId!,
          subject: settings.clientId!,
          privateKey: settings.privateKey,
          alg: settings.algorithm ?? 'ES256',
        })
      : undefined
    return {
      ...this.common(),
      redirectUrl: undefined,
      get clientMetadata() {
        return {
          client_name: settings.clientName ?? 'dsh',
          redirect_uris: [],
          grant_types: [machineGrant(settings.grant)],
          token_endpoint_auth_method: jwt ? 'private_key_jwt' : 'client_secret_basic',
        }
      },
      redirectToAuthorization: () => {
        throw new McpAuthError('failed', `the ${settings.grant} grant has no browser step`)
      },
      saveCodeVerifier: () => {},
      codeVerifier: () => '',
      prepareTokenRequest: async (scope?: string) => {
        const wanted = scope ?? settings.scope
        const params =
          settings.grant === 'cross_app_access'
            ? new URLSearchParams({ grant_type: JWT_BEARER, assertion: await this.identityAssertion(wanted) })
            : new URLSearchParams({ grant_type: 'client_credentials' })
        if (wanted) params.set('scope', wanted)
        return params
      },
      ...(jwt ? { addClientAuthentication: jwt } : {}),
    }
  }

  /** SEP-990: the identity assertion grant for this server (see cross-app.ts); a secret, scrubbed. */
  private async identityAssertion(scope: string | undefined): Promise<string> {
    const grant = await identityAssertionGrant({
      settings: this.options.settings,
      discovery: (await this.load()).discovery,
      url: this.options.url,
      scope,
      fetch: this.options.fetch ?? fetch,
      scrub: (text) => this.scrub(text),
    })
    this.secrets.add(grant)
    return grant
  }

  /**
   * The transport's fetch: adds the bearer token, and answers a 401 (sign in, or refresh) or a 403
   * `insufficient_scope` (sign in again with the scopes the server names) before retrying, at most
   * `maxAttempts` times per request. Concurrent requests share one sign-in.
   */
  wrap(next: FetchLike = this.options.fetch ?? fetch): FetchLike {
    return async (input, init) => {
      const explicit = new Headers(init?.headers).has('authorization')
      const send = async () => {
        const headers = new Headers(init?.headers)
        const tokens = explicit ? undefined : await this.provider.tokens()
        if (tokens) headers.set('authorization', `Bearer ${tokens.access_token}`)
        return next(input, { ...init, headers })
      }
      let response = await send()
      let attempts = 0
      const seen = new Set<string>()
      while (!explicit && !this.closed) {
        const challenge =
          response.status === 401 ||
          (response.status === 403 &&
            this.options.sdk.extractWWWAuthenticateParams(response).error === 'insufficient_scope')
        if (!challenge) break
        const header = response.headers.get('www-authenticate') ?? ''
        if (attempts >= this.options.maxAttempts) {
          throw new McpAuthError(
            'failed',
            `the server still refused access after ${attempts} sign-in${attempts === 1 ? '' : 's'} (HTTP ${response.status}${header ? `: ${oneLine(this.scrub(header))}` : ''})`,
          )
        }
        if (response.status === 403 && seen.has(header)) {
          throw new McpAuthError(
            'failed',
            `the server asks again for scopes it was just granted (HTTP 403: ${oneLine(this.scrub(header))})`,
          )
        }
        seen.add(header)
        attempts++
        const { resourceMetadataUrl, scope } = this.options.sdk.extractWWWAuthenticateParams(response)
        await response.body?.cancel().catch(() => {})
        await this.signIn({ resourceMetadataUrl, scope, stepUp: response.status === 403 })
        response = await send()
      }
      return response
    }
  }

  private signIn(challenge: { resourceMetadataUrl?: URL; scope?: string; stepUp: boolean }): Promise<void> {
    // A request that failed while another sign-in ran retries with its result first.
    if (this.signingIn !== undefined) return this.signingIn
    this.signingIn = this.runSignIn(challenge).finally(() => (this.signingIn = undefined))
    return this.signingIn
  }

  private async runSignIn({
    resourceMetadataUrl,
    scope,
    stepUp,
  }: {
    resourceMetadataUrl?: URL
    scope?: string
    stepUp: boolean
  }): Promise<void> {
    const { auth } = this.options.sdk
    const browser = this.options.settings.grant === 'authorization_code'
    const state = await this.load()
    if (stepUp) {
      // More scopes: a refresh cannot widen a grant, so the user signs in again for the union.
      const granted = state.tokens?.scope?.split(' ') ?? []
      scope = [...new Set([...granted, ...(scope?.split(' ') ?? [])])].filter(Boolean).join(' ') || undefined
      await this.provider.invalidateCredentials?.('tokens')
    }
    if (browser) await this.callback.listen(this.options.settings.callbackPort ?? state.port)
    const options = {
      serverUrl: this.options.url,
      ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}),
      ...(scope ? { scope } : {}),
      fetchFn: this.options.fetch ?? fetch,
    }
    try {
      this.authorizationUrl = undefined
      let result = await auth(this.provider, options)
      if (result === 'AUTHORIZED') return
      const url = this.authorizationUrl as URL | undefined
      if (!url || !this.oauthState) throw new McpAuthError('failed', 'the sign-in did not produce an authorization URL')
      const code = this.callback.expect(this.oauthState)
      const done = new AbortController()
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new McpAuthError(
                'timeout',
                `the sign-in was not completed within ${Math.round(this.options.waitMs / 1000)} s`,
              ),
            ),
          this.options.waitMs,
        )
        timer.unref?.()
      })
      try {
        const shown = this.options.consent({ server: this.options.server, url, signal: done.signal })
        const received = await Promise.race([code, timeout, shown.then(() => Promise.race([code, timeout]))])
        done.abort()
        this.secrets.add(received)
        result = await auth(this.provider, { ...options, authorizationCode: received })
      } finally {
        clearTimeout(timer)
        done.abort()
        code.catch(() => {})
      }
      if (result !== 'AUTHORIZED') throw new McpAuthError('failed', 'the authorization server did not issue a token')
    } catch (error) {
      if (error instanceof McpAuthError) throw new McpAuthError(error.reason, this.scrub(error.message))
      throw new McpAuthError(
        'failed',
        `sign-in failed: ${oneLine(this.scrub(error instanceof Error ? error.message : String(error)))}`,
      )
    } finally {
      this.verifier = undefined
      // The port stays registered; the socket does not stay open between sign-ins.
      if (browser) {
        const port = this.callback.port
        this.callback.close()
        this.callback.port = undefined
        if (port !== undefined && state.port !== port) await this.update((s) => (s.port = port)).catch(() => {})
      }
    }
  }
}
