// @dsh/mcp-oauth: OAuth 2.1 for remote MCP servers, through the official SDK's `auth()` and its
// `OAuthClientProvider` interface: the provider and its fetch wrapper (oauth.ts), the loopback
// callback (callback.ts), where sign-in state is kept (store.ts), SEP-990 cross-app access
// (cross-app.ts), asking the human (sign-in.ts) and a host's sign-ins (sign-ins.ts). A library:
// @dsh/mcp-client builds one McpOAuth per remote server.
export { type AuthSdk, McpOAuth, type OAuthOptions } from './oauth.ts'
export { type ConsentRequest, McpAuthError } from './errors.ts'
export type { OAuthSettings } from './settings.ts'
export {
  type AuthStore,
  credentialStore,
  layeredStore,
  memoryStore,
  type StoredAuth,
  storeKey,
} from './store.ts'
export { identityAssertionGrant, ID_JAG, ID_TOKEN, JWT_BEARER, TOKEN_EXCHANGE } from './cross-app.ts'
export { askSignIn, type BrowserOptions, defaultBrowserCommand, openInBrowser } from './sign-in.ts'
export { type SignInConnection, type SignInHost, SignIns } from './sign-ins.ts'
