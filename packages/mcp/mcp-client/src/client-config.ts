// The row config of `@dsh/mcp-client` (its type and schema) and the options of `ctx.mcp.add()`.
import Schema from 'schemastery'
import type { McpSource } from './config.ts'
import type { ConnectionOptions } from './connection-types.ts'

export interface McpClientConfig extends ConnectionOptions {
  /** `mcpServers`-shaped table; each entry is checked on its own. */
  servers: Record<string, unknown>
  /** Read `<cwd>/.mcp.json`. */
  projectFile: boolean
  /** Read the `mcpServers` settings namespace (`$DSH_HOME/settings.yaml`). */
  userSettings: boolean
  /** Project directory: where `.mcp.json` is read and local servers start. Default: the process cwd. */
  cwd?: string
  /** How long the first model request waits for servers still starting. */
  startupWaitMs: number
  /** The command that opens an address in the user's browser (the URL is appended); default per platform. */
  browser?: string[]
  /** `@server:uri` mentions expanded per message at most. */
  maxMentions: number
  /** Characters of one mentioned resource included at most. */
  mentionMaxChars: number
}

export interface AddServerOptions {
  source?: McpSource
  /** Shown in `list()` and notices; default the source. */
  origin?: string
  /** Agent scope: the server's tools exist only there. */
  scope?: string
  /** Base directory of a relative `cwd`, and the default `cwd` of a local server. */
  cwd?: string
}

const RetrySchema = Schema.object({
  initialDelayMs: Schema.natural()
    .min(1)
    .default(500)
    .description('Delay before the first retry (ms); doubles per failure.'),
  maxDelayMs: Schema.natural().min(1).default(30_000).description('Longest delay between attempts (ms).'),
  maxAttempts: Schema.natural()
    .min(1)
    .default(6)
    .description('Consecutive failures after which a server is left failed.'),
  stableMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('A connection that lasts this long resets the failure count.'),
})

export const McpClientConfigSchema: Schema<Partial<McpClientConfig>, McpClientConfig> = Schema.object({
  servers: Schema.dict(Schema.any())
    .default({})
    .description(
      'MCP servers, in the common mcpServers shape: {name: {command, args, env, cwd} | {url, headers, type}}.',
    ),
  projectFile: Schema.boolean().default(true).description("Also read the project's .mcp.json."),
  userSettings: Schema.boolean().default(true).description('Also read the mcpServers settings namespace.'),
  cwd: Schema.string().description('Project directory (default: the process working directory).'),
  startupWaitMs: Schema.natural()
    .default(10_000)
    .description('How long the first model request waits for servers still starting (ms).'),
  connectTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('Time limit of one connection attempt, and of listing tools (ms).'),
  callTimeoutMs: Schema.natural()
    .min(1)
    .default(120_000)
    .description('A call fails when the server is silent this long (ms); progress notifications restart the clock.'),
  maxCallMs: Schema.natural()
    .min(1)
    .default(900_000)
    .description('A call fails after this long whatever its progress (ms).'),
  reconnectWaitMs: Schema.natural()
    .default(5_000)
    .description('How long a call waits for a server that is reconnecting (ms).'),
  killGraceMs: Schema.natural()
    .default(2_000)
    .description('Grace between SIGTERM and SIGKILL when a local server is stopped (ms).'),
  maxDescriptionChars: Schema.natural()
    .min(100)
    .default(2_000)
    .description('Longest tool description shown to the model.'),
  retry: RetrySchema.default(RetrySchema(undefined as never)),
  authWaitMs: Schema.natural()
    .min(1)
    .default(300_000)
    .description('How long an OAuth sign-in waits for the browser to come back (ms).'),
  maxAuthAttempts: Schema.natural()
    .min(1)
    .default(3)
    .description('Sign-ins one request may trigger (401, 403 insufficient_scope) before it fails.'),
  browser: Schema.array(Schema.string()).description(
    'Command that opens an address in a browser (the URL is appended); default xdg-open / open / start.',
  ),
  maxMentions: Schema.natural().min(1).default(10).description('@server:uri mentions expanded per message at most.'),
  mentionMaxChars: Schema.natural()
    .min(100)
    .default(100_000)
    .description('Characters of one mentioned resource included at most.'),
})
