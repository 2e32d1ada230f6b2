// The ACP server row's configuration: its schema and the ACP tool kinds a `toolKinds` entry may name.
import Schema from 'schemastery'
import { DEFAULT_MAX_MESSAGE_BYTES } from './framing.ts'
import type { ToolKind } from './translate.ts'

const TOOL_KINDS = [
  'read',
  'edit',
  'delete',
  'move',
  'search',
  'execute',
  'think',
  'fetch',
  'switch_mode',
  'other',
] as const

export interface Config {
  stdio: boolean
  exitOnClose: boolean
  agentName: string
  agentTitle: string
  maxSteps?: number
  promptImages: boolean
  toolKinds: Record<string, ToolKind>
  maxToolOutputChars: number
  captureDiffs: boolean
  maxDiffBytes: number
  permissionTimeoutMs: number
  clientFsTools: string[]
  maxMessageBytes: number
}

export const Config: Schema<Config> = Schema.object({
  stdio: Schema.boolean().default(true).description('Serve ACP on stdin/stdout once the app is ready.'),
  exitOnClose: Schema.boolean().default(true).description('Exit the app when the stdio client closes the connection.'),
  agentName: Schema.string().default('dsh').description('agentInfo.name in the initialize response.'),
  agentTitle: Schema.string().default('dsh').description('agentInfo.title in the initialize response.'),
  maxSteps: Schema.natural().min(1).description('Model requests one prompt may take (default: the agent-loop row).'),
  promptImages: Schema.boolean()
    .default(false)
    .description('Accept image prompt content (advertised as promptCapabilities.image).'),
  toolKinds: Schema.dict(Schema.union([...TOOL_KINDS]))
    .default({})
    .description('Tool name -> ACP tool kind, over the built-in table.'),
  maxToolOutputChars: Schema.natural().default(20000).description('Characters of a tool result shown to the client.'),
  captureDiffs: Schema.boolean()
    .default(true)
    .description('Read files before and after edit/write calls to send full-text diffs.'),
  maxDiffBytes: Schema.natural()
    .default(1024 * 1024)
    .description('Files larger than this get hunk diffs only.'),
  permissionTimeoutMs: Schema.natural()
    .default(0)
    .description('How long a permission request may wait for the client; 0 waits until the turn is cancelled.'),
  maxMessageBytes: Schema.natural()
    .min(1)
    .default(DEFAULT_MAX_MESSAGE_BYTES)
    .description('Longest incoming stdio message (bytes); a longer one is dropped and answered with a JSON-RPC error.'),
  clientFsTools: Schema.array(String)
    .default(['read', 'edit', 'write'])
    .description(
      'Tools whose file reads and writes go through the client when it advertises fs capabilities (needs @dsh/acp/client-fs as the fs row).',
    ),
})
