// One MCP server (one client connection): `tools/list` answers the profile's tool registry as the
// model sees it (names, descriptions, JSON schemas) plus `dsh_agent`; `tools/call` runs a tool
// through the registry's pipeline, logged in this connection's session (see calls.ts), or, for
// `dsh_agent`, one headless agent turn in a fresh session. Resources and prompts: see catalog.ts.
import type { Context } from 'cordis'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import type { ToolResultPayload } from '@dsh/tools'
import type {} from '@dsh/agent'
import type {} from '@dsh/llm'
import type {} from '@dsh/permission-presets'
import { describeTurnEnd } from '@dsh/session'
import { chooseModel, modelChoiceUsage } from '@dsh/surface-kit'
import { CallLog } from './calls.ts'
import {
  getSkillPrompt,
  listSessionResources,
  listSkillPrompts,
  readSessionResource,
  SESSION_TEMPLATE,
} from './catalog.ts'

export const AGENT_TOOL = 'dsh_agent'

export interface ServerOptions {
  /** Working directory of tool calls and agent sessions. */
  cwd: string
  /** Offer `dsh_agent`. */
  agentTool: boolean
  /** Steps one `dsh_agent` turn may take at most (undefined: the agent loop's default). */
  maxSteps?: number
  version: string
}

const AGENT_SCHEMA: Tool = {
  name: AGENT_TOOL,
  description:
    'Run a dsh coding agent on a task in this working directory and return its final answer. ' +
    'The agent has the same tools, permission mode and sandbox as this server; each call starts a fresh session.',
  inputSchema: {
    type: 'object',
    properties: { task: { type: 'string', description: 'What the agent should do, in plain words.' } },
    required: ['task'],
    additionalProperties: false,
  },
}

/** The registry's result (`tool/result` payload) as an MCP tool result. */
export function toCallResult(result: ToolResultPayload): CallToolResult {
  const content: CallToolResult['content'] = []
  for (const block of result.message.content) {
    if (block.type === 'text') content.push({ type: 'text', text: block.text })
    else if (block.type === 'image') content.push({ type: 'image', data: block.data, mimeType: block.mediaType })
  }
  if (content.length === 0) content.push({ type: 'text', text: '' })
  return { content, ...(result.message.isError ? { isError: true } : {}) }
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** The tools `tools/list` answers: the registry's schemas as the model sees them, plus `dsh_agent`. */
export function listTools(ctx: Context, agentTool: boolean): Tool[] {
  const tools: Tool[] = ctx.tools.schemas().map((s) => ({
    name: s.name,
    description: s.description,
    inputSchema: { type: 'object', ...(s.parameters as Record<string, unknown>) } as Tool['inputSchema'],
  }))
  if (agentTool && !tools.some((t) => t.name === AGENT_TOOL)) tools.push(AGENT_SCHEMA)
  return tools
}

export function createServer(ctx: Context, opts: ServerOptions): Server {
  const server = new Server(
    { name: 'dsh', title: 'dsh', version: opts.version },
    {
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: {} },
      instructions:
        "dsh's coding tools (read, edit, bash, ...) run in this working directory under dsh's permission mode and sandbox." +
        (opts.agentTool ? ` ${AGENT_TOOL} hands a whole task to a dsh agent.` : ''),
    },
  )
  const listed = () => listTools(ctx, opts.agentTool)
  const calls = new CallLog(ctx, { cwd: opts.cwd, client: () => server.getClientVersion() })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed() }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params
    if (opts.agentTool && name === AGENT_TOOL && !ctx.tools.schemas().some((s) => s.name === AGENT_TOOL))
      return runAgent(ctx, opts, args, extra.signal)
    if (!ctx.tools.schemas().some((s) => s.name === name)) {
      const known = listed().map((t) => t.name)
      throw new McpError(ErrorCode.InvalidParams, `unknown tool "${name}"; the tools are: ${known.join(', ')}`)
    }
    const result = toCallResult(await calls.run(name, args, extra.signal))
    return calls.sessionId ? { ...result, _meta: { 'dsh/sessionId': calls.sessionId } } : result
  })
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: await listSessionResources(ctx, opts.cwd),
  }))
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: SESSION_TEMPLATE,
        name: 'dsh-session',
        title: 'dsh session transcript',
        description: 'The transcript of one dsh session by id (as listed by `dsh sessions`).',
        mimeType: 'text/markdown',
      },
    ],
  }))
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { text, mimeType } = await readSessionResource(ctx, request.params.uri)
    return { contents: [{ uri: request.params.uri, mimeType, text }] }
  })
  server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: listSkillPrompts(ctx, opts.cwd) }))
  server.setRequestHandler(GetPromptRequestSchema, (request) =>
    getSkillPrompt(ctx, opts.cwd, request.params.name, request.params.arguments),
  )
  return server
}

async function runAgent(
  ctx: Context,
  opts: ServerOptions,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<CallToolResult> {
  const task = args.task
  if (typeof task !== 'string' || task.trim() === '')
    throw new McpError(ErrorCode.InvalidParams, `${AGENT_TOOL}: "task" must be a non-empty string`)
  const extra = Object.keys(args).filter((k) => k !== 'task')
  if (extra.length)
    throw new McpError(ErrorCode.InvalidParams, `${AGENT_TOOL}: unknown argument ${JSON.stringify(extra[0])}`)
  const agents = ctx.get('agents')
  const llm = ctx.get('llm')
  if (!agents || !llm) return failure(`${AGENT_TOOL} is unavailable: the profile has no agent or llm row`)
  let model: Awaited<ReturnType<typeof chooseModel>>
  try {
    model = await chooseModel(llm, undefined, ctx.get('agentDefaultModel')?.get())
  } catch (error) {
    return failure(`${AGENT_TOOL}: ${modelChoiceUsage(error) ?? errorText(error)}`)
  }
  const agent = agents.create({ cwd: opts.cwd, model, maxSteps: opts.maxSteps })
  const stop = () => agent.abort('the MCP client cancelled the call')
  signal.addEventListener('abort', stop, { once: true })
  try {
    const result = await agent.send(task)
    await agent.idle()
    if (result.reason !== 'completed')
      return failure(
        `the dsh agent did not finish (session ${agent.session.id}): ${describeTurnEnd(result.reason, result.error)}`,
      )
    return {
      content: [{ type: 'text', text: result.text }],
      _meta: { 'dsh/sessionId': agent.session.id },
    }
  } finally {
    signal.removeEventListener('abort', stop)
    await agent.dispose().catch(() => {})
  }
}

const failure = (text: string): CallToolResult => ({ content: [{ type: 'text', text }], isError: true })
