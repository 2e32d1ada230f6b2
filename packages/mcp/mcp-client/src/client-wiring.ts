// The SDK objects of one connection attempt: the transport for the server's spec (stdio through
// `ctx.subprocess`, or HTTP/SSE with the OAuth-wrapped fetch), and a client with dsh's
// capabilities (form and URL elicitation, the workspace as the one root) whose notifications are
// handed to the connection.
import { basename } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type {
  ElicitRequestFormParams,
  ElicitRequestURLParams,
  ElicitResult,
  LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js'
import type { ServerSpec } from './config.ts'
import type { ConnectionHost } from './connection-types.ts'
import { McpOAuth } from '@dsh/mcp-oauth'
import type { Client, Sdk } from './sdk.ts'
import type { CatalogKind } from './server-catalog.ts'
import { SubprocessStdioTransport } from './stdio-transport.ts'

const CLIENT_INFO = { name: 'dsh', version: '0.1.0' }

/**
 * The transport of one attempt. A remote server that may sign in gets one `McpOAuth` for the
 * connection's life: pass the one returned last time (`oauth`), keep the one returned now.
 */
export function createTransport(
  sdk: Sdk,
  server: string,
  spec: ServerSpec,
  host: ConnectionHost,
  oauth: McpOAuth | undefined,
): { transport: Transport; oauth?: McpOAuth } {
  if (spec.transport === 'stdio')
    return { transport: new SubprocessStdioTransport(sdk, host.subprocess, spec, host.options.killGraceMs), oauth }
  const requestInit = { headers: spec.headers }
  if (spec.oauth !== false) {
    oauth ??= new McpOAuth({
      server,
      url: spec.url,
      settings: spec.oauth,
      store: host.authStore,
      sdk,
      consent: (request) => host.consent(request),
      waitMs: host.options.authWaitMs,
      maxAttempts: host.options.maxAuthAttempts,
    })
  }
  const fetch = oauth?.wrap()
  const options = { requestInit, ...(fetch ? { fetch } : {}) }
  const transport =
    spec.transport === 'sse'
      ? new sdk.SSEClientTransport(new URL(spec.url), options)
      : new sdk.StreamableHTTPClientTransport(new URL(spec.url), options)
  return { transport, ...(oauth ? { oauth } : {}) }
}

/** What the client's notifications and server-side requests are handed to. */
export interface ClientHooks {
  /** `notifications/tools/list_changed` (debounced). */
  toolsChanged(client: Client): void
  /** `notifications/{prompts,resources}/list_changed` (debounced). */
  catalogChanged(client: Client, kind: CatalogKind): void
  /** `notifications/resources/updated` (a subscribed resource changed). */
  resourceUpdated(client: Client, uri: string): void
  /** `notifications/message`. */
  log(params: LoggingMessageNotification['params']): void
  /** `elicitation/create`. */
  elicit(params: ElicitRequestFormParams | ElicitRequestURLParams, signal: AbortSignal): Promise<ElicitResult>
  /** The workspace offered as the one root (`roots/list`). */
  workspace: string
}

export function createClient(sdk: Sdk, hooks: ClientHooks): Client {
  const client: Client = new sdk.Client(CLIENT_INFO, {
    capabilities: { elicitation: { form: { applyDefaults: true }, url: {} }, roots: { listChanged: false } },
    listChanged: {
      tools: { autoRefresh: false, debounceMs: 100, onChanged: () => hooks.toolsChanged(client) },
      prompts: { autoRefresh: false, debounceMs: 100, onChanged: () => hooks.catalogChanged(client, 'prompts') },
      resources: { autoRefresh: false, debounceMs: 100, onChanged: () => hooks.catalogChanged(client, 'resources') },
    },
  })
  client.setNotificationHandler(sdk.LoggingMessageNotificationSchema, (notification) => hooks.log(notification.params))
  client.setNotificationHandler(sdk.ResourceUpdatedNotificationSchema, (notification) =>
    hooks.resourceUpdated(client, notification.params.uri),
  )
  client.setRequestHandler(sdk.ElicitRequestSchema, (request, extra) =>
    hooks.elicit(request.params as ElicitRequestFormParams | ElicitRequestURLParams, extra.signal),
  )
  client.setRequestHandler(sdk.ListRootsRequestSchema, () => ({
    roots: [{ uri: pathToFileURL(hooks.workspace).href, name: basename(hooks.workspace) || 'workspace' }],
  }))
  return client
}
