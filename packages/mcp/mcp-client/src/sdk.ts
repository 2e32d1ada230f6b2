// The MCP SDK, loaded on first use: importing it (with zod and ajv) costs more than a whole dsh
// boot without it, and most sessions configure no MCP server.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'

export interface Sdk {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client
  SSEClientTransport: typeof import('@modelcontextprotocol/sdk/client/sse.js').SSEClientTransport
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport
  ErrorCode: typeof import('@modelcontextprotocol/sdk/types.js').ErrorCode
  McpError: typeof import('@modelcontextprotocol/sdk/types.js').McpError
  ReadBuffer: typeof import('@modelcontextprotocol/sdk/shared/stdio.js').ReadBuffer
  serializeMessage: typeof import('@modelcontextprotocol/sdk/shared/stdio.js').serializeMessage
  deserializeMessage: typeof import('@modelcontextprotocol/sdk/shared/stdio.js').deserializeMessage
  /** `tools/list` pages are read loosely and each tool checked on its own (see server.ts). */
  PaginatedResultSchema: typeof import('@modelcontextprotocol/sdk/types.js').PaginatedResultSchema
  ToolSchema: typeof import('@modelcontextprotocol/sdk/types.js').ToolSchema
  ElicitRequestSchema: typeof import('@modelcontextprotocol/sdk/types.js').ElicitRequestSchema
  ListRootsRequestSchema: typeof import('@modelcontextprotocol/sdk/types.js').ListRootsRequestSchema
  LoggingMessageNotificationSchema: typeof import('@modelcontextprotocol/sdk/types.js').LoggingMessageNotificationSchema
  ResourceUpdatedNotificationSchema: typeof import('@modelcontextprotocol/sdk/types.js').ResourceUpdatedNotificationSchema
  auth: typeof import('@modelcontextprotocol/sdk/client/auth.js').auth
  extractWWWAuthenticateParams: typeof import('@modelcontextprotocol/sdk/client/auth.js').extractWWWAuthenticateParams
  createPrivateKeyJwtAuth: typeof import('@modelcontextprotocol/sdk/client/auth-extensions.js').createPrivateKeyJwtAuth
}

export type { Client }

let loading: Promise<Sdk> | undefined
/** Set once `loadSdk()` has resolved. */
export let sdk: Sdk | undefined

export function loadSdk(): Promise<Sdk> {
  loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/shared/stdio.js'),
    import('@modelcontextprotocol/sdk/client/auth.js'),
    import('@modelcontextprotocol/sdk/client/auth-extensions.js'),
  ]).then(([client, sse, http, types, stdio, auth, authExtensions]) => {
    sdk = {
      Client: client.Client,
      SSEClientTransport: sse.SSEClientTransport,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      ErrorCode: types.ErrorCode,
      McpError: types.McpError,
      ReadBuffer: stdio.ReadBuffer,
      serializeMessage: stdio.serializeMessage,
      deserializeMessage: stdio.deserializeMessage,
      PaginatedResultSchema: types.PaginatedResultSchema,
      ToolSchema: types.ToolSchema,
      ElicitRequestSchema: types.ElicitRequestSchema,
      ListRootsRequestSchema: types.ListRootsRequestSchema,
      LoggingMessageNotificationSchema: types.LoggingMessageNotificationSchema,
      ResourceUpdatedNotificationSchema: types.ResourceUpdatedNotificationSchema,
      auth: auth.auth,
      extractWWWAuthenticateParams: auth.extractWWWAuthenticateParams,
      createPrivateKeyJwtAuth: authExtensions.createPrivateKeyJwtAuth,
    }
    return sdk
  })
  return loading
}
