// What `dsh mcp serve` offers besides tools: the sessions of its working directory as resources
// (`dsh://session/<id>`, a Markdown transcript each) and dsh's skills as prompts (what `/<skill>`
// sends in a dsh session). Both are read from the services at each request.
import type { Context } from 'cordis'
import {
  ErrorCode,
  McpError,
  type GetPromptResult,
  type Prompt,
  type Resource,
} from '@modelcontextprotocol/sdk/types.js'
import type { AnySessionEvent } from '@dsh/session'
import { isValidSessionId } from '@dsh/session-persistence'
import type {} from '@dsh/skill'
import { sessionRowOf, type SessionRow } from '@dsh/surface-kit'

export const SESSION_URI = 'dsh://session/'
export const SESSION_TEMPLATE = `${SESSION_URI}{id}`
/** JSON-RPC code the MCP specification gives an unknown resource. */
export const RESOURCE_NOT_FOUND = -32002
/** Sessions listed at most (newest first); older ones stay readable through the template. */
export const MAX_LISTED_SESSIONS = 100
/** Characters of one tool result kept in a transcript. */
const MAX_RESULT_CHARS = 4000

/**
 * The sessions of `cwd` with at least one turn, newest first: the stored ones, and the ones live in
 * this process (a live row wins: it may be ahead of what is stored).
 */
export async function listSessionResources(ctx: Context, cwd: string): Promise<Resource[]> {
  const rows = new Map<string, Pick<SessionRow, 'id' | 'title' | 'firstPrompt' | 'turns' | 'updatedAt'>>()
  const stored = (await ctx.get('durableSessions')?.list()) ?? []
  for (const row of stored) if (row.cwd === cwd && row.damaged === undefined) rows.set(row.id, row)
  for (const session of ctx.get('sessions')?.list() ?? [])
    if (session.cwd === cwd) rows.set(session.id, sessionRowOf(session.id, session.cwd, session.events))
  const listed = [...rows.values()].filter((row) => row.turns > 0).sort((a, b) => b.updatedAt - a.updatedAt)
  return listed.slice(0, MAX_LISTED_SESSIONS).map((row) => ({
    uri: `${SESSION_URI}${row.id}`,
    name: `session-${row.id}`,
    title: oneLine(row.title ?? row.firstPrompt ?? `session ${row.id}`),
    description: `dsh session transcript: ${row.turns} turn${row.turns === 1 ? '' : 's'}, last active ${new Date(row.updatedAt).toISOString()}`,
    mimeType: 'text/markdown',
  }))
}

export async function readSessionResource(ctx: Context, uri: string): Promise<{ text: string; mimeType: string }> {
  if (!uri.startsWith(SESSION_URI))
    throw new McpError(RESOURCE_NOT_FOUND, `unknown resource ${JSON.stringify(uri)}: dsh serves ${SESSION_TEMPLATE}`)
  const id = decodeURIComponent(uri.slice(SESSION_URI.length))
  if (!isValidSessionId(id))
    throw new McpError(ErrorCode.InvalidParams, `${JSON.stringify(id)} is not a dsh session id (in ${uri})`)
  const live = ctx.get('sessions')?.get(id)
  let events: readonly AnySessionEvent[]
  let cwd: string
  if (live) {
    events = live.events
    cwd = live.cwd
  } else {
    const persistence = ctx.get('sessionPersistence')
    if (!persistence) throw new McpError(RESOURCE_NOT_FOUND, `no session ${id}: this profile stores no sessions`)
    try {
      const loaded = await persistence.inspect(id)
      events = loaded.events
      cwd = loaded.header.cwd
    } catch (error) {
      throw new McpError(RESOURCE_NOT_FOUND, `no session ${id}: ${(error as Error).message}`)
    }
  }
  return { text: transcript(id, cwd, events), mimeType: 'text/markdown' }
}

const oneLine = (text: string) => {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > 120 ? `${line.slice(0, 117)}...` : line
}

const texts = (blocks: readonly { type: string; text?: string }[]) =>
  blocks
    .map((b) => (b.type === 'text' ? (b.text ?? '') : b.type === 'image' ? '[image]' : ''))
    .filter((t) => t !== '')
    .join('\n')

/** A Markdown transcript of a session log: what each party said, each call and its result. */
export function transcript(id: string, cwd: string, events: readonly AnySessionEvent[]): string {
  const out: string[] = [`# dsh session ${id}`, '', `Working directory: \`${cwd}\``]
  for (const event of events) {
    switch (event.type) {
      case 'session/title':
        out.push(`Title: ${event.data.title}`)
        break
      case 'turn/start':
        out.push('', `## Turn ${event.data.turn + 1}`)
        break
      case 'user/message': {
        const source = event.data.source
        const who =
          source.kind === 'human' ? 'User' : source.kind === 'plugin' ? (source.label ?? source.plugin) : 'System'
        out.push('', `**${who}:**`, '', texts(event.data.content))
        break
      }
      case 'assistant/message': {
        const said = texts(event.data.message.content)
        if (said) out.push('', '**Assistant:**', '', said)
        for (const block of event.data.message.content)
          if (block.type === 'tool-call') out.push('', `Tool call \`${block.name}\` ${'`'}${block.arguments}${'`'}`)
        break
      }
      case 'tool/result': {
        let text = texts(event.data.message.content)
        if (text.length > MAX_RESULT_CHARS)
          text = `${text.slice(0, MAX_RESULT_CHARS)}\n[... ${text.length - MAX_RESULT_CHARS} more characters]`
        const status = event.data.message.isError ? ' (error)' : ''
        out.push(
          '',
          `Result of \`${event.data.message.name}\`${status}:`,
          '',
          '```',
          text.replace(/```/g, '`\u200b``'),
          '```',
        )
        break
      }
      case 'turn/end':
        if (event.data.reason !== 'completed')
          out.push('', `_Turn ended: ${event.data.reason}${event.data.error ? ` (${event.data.error.message})` : ''}_`)
        break
    }
  }
  return `${out.join('\n')}\n`
}

export function listSkillPrompts(ctx: Context, cwd: string): Prompt[] {
  const skills = ctx.get('skills')
  if (!skills) return []
  return skills.list(cwd).map((skill) => ({
    name: skill.name,
    description: `Skill: ${skill.description}`,
    arguments: [{ name: 'request', description: 'What to apply the skill to (optional).', required: false }],
  }))
}

export async function getSkillPrompt(
  ctx: Context,
  cwd: string,
  name: string,
  args: Record<string, string> | undefined,
): Promise<GetPromptResult> {
  const skills = ctx.get('skills')
  const known = skills?.list(cwd) ?? []
  if (!skills || !known.some((s) => s.name === name))
    throw new McpError(
      ErrorCode.InvalidParams,
      `unknown prompt "${name}"; the prompts are: ${known.map((s) => s.name).join(', ') || '(none)'}`,
    )
  const extra = Object.keys(args ?? {}).filter((k) => k !== 'request')
  if (extra.length)
    throw new McpError(ErrorCode.InvalidParams, `prompt "${name}": unknown argument ${JSON.stringify(extra[0])}`)
  const loaded = await skills.load(name, cwd).catch((error: Error) => {
    throw new McpError(ErrorCode.InternalError, `prompt "${name}": ${error.message}`)
  })
  const request = (args?.request ?? '').trim()
  return {
    description: `Skill: ${loaded.info.description}`,
    messages: [
      { role: 'user', content: { type: 'text', text: `${loaded.body.trimEnd()}${request ? `\n\n${request}` : ''}` } },
    ],
  }
}
