// The session methods, approvals/questions answers, llm and commands listings: contract objects
// shared by the host (`@dsh/api-gateway`) and any client. Browser-safe.
import Schema from 'schemastery'
import { defineMethod } from './contract.ts'

export type ReasoningEffort = 'off' | 'low' | 'high' | 'max'
export const ReasoningEffortSchema: Schema<ReasoningEffort> = Schema.union([
  'off',
  'low',
  'high',
  'max',
] as const) as Schema<ReasoningEffort>

/** `stored`: only on disk; `idle`/`running`/`waiting` (an approval or question is pending): live. */
export type SessionStatus = 'stored' | 'idle' | 'running' | 'waiting'

export interface WireModel {
  provider: string
  model: string
  reasoningEffort?: ReasoningEffort
}
export const WireModelSchema: Schema<WireModel> = Schema.object({
  provider: Schema.string().required(),
  model: Schema.string().required(),
  reasoningEffort: ReasoningEffortSchema,
}) as Schema<WireModel>

/**
 * An object-valued field that may be absent. schemastery fills a missing object field with `{}`
 * and then checks its required keys, so an optional object needs this union.
 */
export const optionalObject = <T>(schema: Schema<T>): Schema<T | undefined> =>
  Schema.union([schema, Schema.const(undefined)]) as Schema<T | undefined>

export interface SessionRow {
  sessionId: string
  cwd: string
  title?: string
  firstPrompt?: string
  createdAt: number
  updatedAt: number
  turns: number
  events: number
  archived: boolean
  status: SessionStatus
  /** Prompts waiting for the running turn to end. */
  queued: number
  model?: WireModel
  permissionMode?: string
}
export const SessionRowSchema: Schema<SessionRow> = Schema.object({
  sessionId: Schema.string().required(),
  cwd: Schema.string().required(),
  title: Schema.string(),
  firstPrompt: Schema.string(),
  createdAt: Schema.number().required(),
  updatedAt: Schema.number().required(),
  turns: Schema.natural().required(),
  events: Schema.natural().required(),
  archived: Schema.boolean().required(),
  status: Schema.union(['stored', 'idle', 'running', 'waiting'] as const).required(),
  queued: Schema.natural().required(),
  model: optionalObject(WireModelSchema),
  permissionMode: Schema.string(),
}) as Schema<SessionRow>

/** One session log event as stored: `seq` is contiguous from 0 and is the SSE event id. */
export interface WireEvent {
  seq: number
  type: string
  time: number
  data: unknown
}
export const WireEventSchema: Schema<WireEvent> = Schema.object({
  seq: Schema.natural().required(),
  type: Schema.string().required(),
  time: Schema.number().required(),
  data: Schema.any(),
}) as Schema<WireEvent>

const sessionId = Schema.string().min(1).required().description('Session id.')

export const sessionsList = defineMethod('sessions.list', {
  description: 'Live and stored sessions, most recently updated first; paged, searchable by title.',
  params: Schema.object({
    query: Schema.string().description('Case-insensitive substring of the title (or the first prompt when untitled).'),
    cwd: Schema.string().description('Only sessions of this directory.'),
    includeArchived: Schema.boolean().default(false),
    refresh: Schema.boolean()
      .default(false)
      .description(
        'Re-read the stored sessions before answering (sessions written by other processes appear at the next periodic rescan otherwise).',
      ),
    offset: Schema.natural().default(0),
    limit: Schema.natural().min(1).max(500).default(50),
  }),
  result: Schema.object({
    sessions: Schema.array(SessionRowSchema).required(),
    total: Schema.natural().required(),
    nextOffset: Schema.natural(),
  }) as Schema<{ sessions: SessionRow[]; total: number; nextOffset?: number }>,
})

export const sessionsCreate = defineMethod('sessions.create', {
  description: 'Creates a session (and its agent) in a directory or a workspace.',
  params: Schema.object({
    cwd: Schema.string().description('An existing directory.'),
    workspaceId: Schema.string().description('A workspace of ctx.workspaces; its directory is the cwd.'),
    model: Schema.string().description(
      '"provider/model" or a model of the default provider; default: the configured default model.',
    ),
    reasoningEffort: ReasoningEffortSchema,
    title: Schema.string(),
  }),
  result: Schema.object({ session: SessionRowSchema.required() }),
})

export const sessionsHistory = defineMethod('sessions.history', {
  description: 'A page of the session log from `fromSeq`.',
  params: Schema.object({
    sessionId,
    fromSeq: Schema.natural().default(0),
    limit: Schema.natural().min(1).max(5000).default(1000),
  }),
  result: Schema.object({
    events: Schema.array(WireEventSchema).required(),
    /** The seq to ask for next. */
    nextSeq: Schema.natural().required(),
    /** Whether the page reached the end of the log as it is now. */
    end: Schema.boolean().required(),
  }),
})

export type PromptMode = 'queue' | 'steer'
/** A file or session the user picked as context of a prompt (the composer's `@` menu). */
export type PromptReference =
  | { kind: 'file'; path: string }
  | { kind: 'session'; sessionId: string }
  | { kind: 'resource'; server: string; uri: string }

const PromptReferenceSchema: Schema<PromptReference> = Schema.union([
  Schema.object({ kind: Schema.const('file').required(), path: Schema.string().min(1).max(4096).required() }),
  Schema.object({ kind: Schema.const('session').required(), sessionId: Schema.string().min(1).max(200).required() }),
  Schema.object({
    kind: Schema.const('resource').required(),
    server: Schema.string().min(1).max(200).required(),
    uri: Schema.string().min(1).max(4096).required(),
  }),
]) as Schema<PromptReference>

export const sessionsPrompt = defineMethod('sessions.prompt', {
  description:
    'Sends a human message. While a turn runs, `queue` (default) runs it after the turn, `steer` hands it to the running turn at its next step. `references` (optional) lists the files, sessions and MCP resources the user picked as context: when present, only those become context and `@words` in the text stay text; absent, `@path` words naming existing files are expanded.',
  params: Schema.object({
    sessionId,
    text: Schema.string().min(1).required(),
    mode: Schema.union(['queue', 'steer'] as const).default('queue'),
    // Absent must stay absent (an older client: the text rule); schemastery would fill `[]`.
    references: optionalObject(Schema.array(PromptReferenceSchema)),
  }),
  result: Schema.object({
    /** `started`: a turn began with it; `queued`: waiting for the running turn; `steered`: given to the running turn. */
    disposition: Schema.union(['started', 'queued', 'steered'] as const).required(),
    queued: Schema.natural().required(),
  }),
})

export const sessionsCancel = defineMethod('sessions.cancel', {
  description: 'Cancels the running turn and drops queued prompts.',
  params: Schema.object({ sessionId }),
  result: Schema.object({ cancelled: Schema.boolean().required(), dropped: Schema.natural().required() }),
})

export const sessionsRename = defineMethod('sessions.rename', {
  params: Schema.object({ sessionId, title: Schema.string().min(1).max(200).required() }),
  result: Schema.object({ session: SessionRowSchema.required() }),
})

export const sessionsArchive = defineMethod('sessions.archive', {
  description: 'Archives (or with archived: false, restores) a session. An archived session refuses prompts.',
  params: Schema.object({ sessionId, archived: Schema.boolean().default(true) }),
  result: Schema.object({ session: SessionRowSchema.required() }),
})

export const sessionsRemove = defineMethod('sessions.remove', {
  description:
    'Removes a session from the web host: it leaves every list, its streams close, and `session/removed` goes out on the host stream. Refused (409 SESSION_BUSY) while a turn runs, waits for an answer or has queued prompts. The log stays on disk (other surfaces can still resume it).',
  params: Schema.object({ sessionId }),
  result: Schema.object({ sessionId: Schema.string().required() }),
})

export const sessionsSetModel = defineMethod('sessions.setModel', {
  params: Schema.object({
    sessionId,
    model: Schema.string().min(1).required(),
    reasoningEffort: ReasoningEffortSchema,
  }),
  result: Schema.object({ model: WireModelSchema.required() }),
})

export const sessionsSetPermissionMode = defineMethod('sessions.setPermissionMode', {
  params: Schema.object({ sessionId, mode: Schema.string().min(1).required() }),
  result: Schema.object({ mode: Schema.string().required() }),
})

export const sessionsFork = defineMethod('sessions.fork', {
  description:
    'A new session holding the log before turn `beforeTurn` (default: the whole log, which must not end inside a turn).',
  params: Schema.object({
    sessionId,
    beforeTurn: Schema.natural().description('Number of the turn to leave out, with everything after it.'),
  }),
  result: Schema.object({ session: SessionRowSchema.required() }),
})

export type ApprovalChoice = 'allowed-once' | 'allowed-always' | 'rejected'
export const approvalsRespond = defineMethod('approvals.respond', {
  params: Schema.object({
    requestId: Schema.string().min(1).required(),
    decision: Schema.union(['allowed-once', 'allowed-always', 'rejected'] as const).required(),
    reason: Schema.string(),
    message: Schema.string(),
  }),
  result: Schema.object({}),
})

export interface WireQuestionAnswer {
  selected: string[]
  text?: string
}
export const questionsRespond = defineMethod('questions.respond', {
  params: Schema.object({
    requestId: Schema.string().min(1).required(),
    answers: Schema.dict(
      Schema.object({ selected: Schema.array(Schema.string()).default([]), text: Schema.string() }),
    ).required(),
  }),
  result: Schema.object({}),
})

export const llmProviders = defineMethod('llm.providers', {
  params: Schema.object({}),
  result: Schema.object({
    providers: Schema.array(Schema.string()).required(),
    default: optionalObject(WireModelSchema),
  }) as Schema<{ providers: string[]; default?: WireModel }>,
})

export const llmModels = defineMethod('llm.models', {
  params: Schema.object({ provider: Schema.string().min(1).required() }),
  result: Schema.object({ models: Schema.array(Schema.object({ id: Schema.string().required() })).required() }),
})

export interface CommandInfo {
  name: string
  description: string
  usage?: string
}
export const commandsList = defineMethod('commands.list', {
  description:
    'The registered slash commands (name, description, usage); the host stream sends `commands/changed` when the list changes.',
  params: Schema.object({}),
  result: Schema.object({
    commands: Schema.array(
      Schema.object({
        name: Schema.string().required(),
        description: Schema.string().required(),
        usage: Schema.string(),
      }),
    ).required(),
  }) as Schema<{ commands: CommandInfo[] }>,
})

export const commandsExecute = defineMethod('commands.execute', {
  description: 'Runs a slash command line (`/name args`) in a session.',
  params: Schema.object({ sessionId, line: Schema.string().min(1).required() }),
  result: Schema.object({
    ok: Schema.boolean().required(),
    name: Schema.string().required(),
    output: Schema.string(),
    error: optionalObject(Schema.object({ code: Schema.string().required(), message: Schema.string().required() })),
  }) as Schema<{ ok: boolean; name: string; output?: string; error?: { code: string; message: string } }>,
})

/** Every contract this package declares, in one list (a host registers them, a client may list them). */
export const sessionContracts = [
  sessionsList,
  sessionsCreate,
  sessionsHistory,
  sessionsPrompt,
  sessionsCancel,
  sessionsRename,
  sessionsArchive,
  sessionsRemove,
  sessionsSetModel,
  sessionsSetPermissionMode,
  sessionsFork,
  approvalsRespond,
  questionsRespond,
  llmProviders,
  llmModels,
  commandsList,
  commandsExecute,
] as const
