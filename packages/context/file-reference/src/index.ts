// @dsh/file-reference: `@path` mentions of workspace files. When a human message enters a step,
// every `@path` in it (inside the session directory) adds one logged context message after it
// with the file's content, or a one-line reason it has none (missing, outside, directory, binary),
// so what the model saw is in the log and survives a resume. With `ctx.api` mounted it serves
// `files.search` for the composer's `@` menu: ripgrep's file list (.gitignore respected, started
// through `ctx.subprocess`), fuzzy ranked.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { InjectedContext, PreStepPayload } from '@dsh/agent'
import type {} from '@dsh/api-gateway'
import type { MessageReference } from '@dsh/session'
import type { SubprocessService } from '@dsh/subprocess'
import type {} from '@dsh/sandbox-policy'
import { ApiError } from '@dsh/web-protocol'
import { filesSearch } from './contract.ts'
import { mentionedPaths, renderMention, type ResolvedMention, resolveMention, type SandboxPolicy } from './mentions.ts'
import { listFiles, rank, type Listing } from './search.ts'

export { filesSearch, type FileMatch } from './contract.ts'
export { mentionedPaths, resolveMention, renderMention, type ResolvedMention } from './mentions.ts'
export { listFiles, rank, score } from './search.ts'

export const name = '@dsh/file-reference'
export const SOURCE_PLUGIN = '@dsh/file-reference'

export interface FileReferenceConfig {
  /** Bytes of one file included at most; the rest is left out with a note. */
  maxBytes: number
  /** Mentions expanded per message at most (the rest are left as text). */
  maxMentions: number
  /** Files listed at most for the `@` menu. */
  maxFiles: number
  /** A directory's listing is reused for this long (ms). */
  listCacheMs: number
}

export const Config: Schema<Partial<FileReferenceConfig>, FileReferenceConfig> = Schema.object({
  maxBytes: Schema.natural().min(1).default(100_000).description('Bytes of one mentioned file included at most.'),
  maxMentions: Schema.natural().min(1).default(10).description('Mentions expanded per message at most.'),
  maxFiles: Schema.natural().min(1).default(50_000).description('Files listed at most for the @ menu.'),
  listCacheMs: Schema.natural().default(5_000).description('How long a directory listing is reused (ms).'),
}) as Schema<Partial<FileReferenceConfig>, FileReferenceConfig>

const textOf = (content: InjectedContext['content']): string =>
  typeof content === 'string' ? content : content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n')

/** Text mentions looked at per message at most (each is one `stat`). */
const MAX_TEXT_MENTIONS = 100

/**
 * The context messages of a human message. With `references` (a client that marks what was
 * picked: the web composer), exactly the picked files, each with its content or the reason it
 * has none. Without them (TUI, headless, older clients), the `@path` words of `text` that name
 * something in the filesystem; a word that names nothing (`@nothing`, `@alice`) stays text.
 */
export async function expandMentions(
  cwd: string,
  text: string,
  config: Pick<FileReferenceConfig, 'maxBytes' | 'maxMentions'>,
  policy?: SandboxPolicy,
  references?: readonly MessageReference[],
): Promise<InjectedContext[]> {
  let resolved: ResolvedMention[]
  if (references) {
    const paths = [
      ...new Set(references.flatMap((r) => (r.kind === 'file' && r.path ? [r.path.replace(/^@/, '')] : []))),
    ].slice(0, config.maxMentions)
    resolved = await Promise.all(paths.map((p) => resolveMention(cwd, p, config.maxBytes, policy)))
  } else {
    const paths = mentionedPaths(text).slice(0, MAX_TEXT_MENTIONS)
    const all = await Promise.all(paths.map((p) => resolveMention(cwd, p, config.maxBytes, policy)))
    resolved = all.filter((m) => m.found).slice(0, config.maxMentions)
  }
  // `@a.md` and `@a.md.` name one file: include it once.
  const unique = resolved.filter((m, i) => resolved.findIndex((o) => o.path === m.path) === i)
  return unique.map((m) => ({
    content: renderMention(m),
    source: { kind: 'plugin' as const, plugin: SOURCE_PLUGIN, label: `@${m.path}` },
  }))
}

export function apply(ctx: Context, raw: Partial<FileReferenceConfig> = {}): void {
  const config: FileReferenceConfig = {
    maxBytes: 100_000,
    maxMentions: 10,
    maxFiles: 50_000,
    listCacheMs: 5_000,
    ...raw,
  }

  ctx.on('agent/pre-step', async (payload: PreStepPayload, next) => {
    const out: InjectedContext[] = []
    for (const message of payload.messages) {
      out.push(message)
      if (message.source.kind !== 'human') continue
      const { session, cwd } = payload.agent
      out.push(
        ...(await expandMentions(
          cwd,
          textOf(message.content),
          config,
          ctx.get('sandboxPolicy')?.resolve({ sessionId: session.id, cwd }),
          message.source.references,
        )),
      )
    }
    payload.messages.splice(0, payload.messages.length, ...out)
    return next()
  })

  const listings = new Map<string, Promise<Listing>>()
  const listing = (subprocess: SubprocessService, cwd: string) => {
    let found = listings.get(cwd)
    if (!found) {
      found = listFiles(subprocess, cwd, config.maxFiles)
      listings.set(cwd, found)
      const drop = () =>
        setTimeout(() => listings.get(cwd) === found && listings.delete(cwd), config.listCacheMs).unref?.()
      found.then(drop, () => listings.delete(cwd))
    }
    return found
  }

  ctx.inject(['api', 'sessions', 'subprocess'], (inner) => {
    const api = inner.api
    const cwdOf = async (sessionId: string): Promise<string> => {
      const live = inner.sessions.get(sessionId)
      if (live) return live.cwd
      const { sessions } = (await api.call(
        'sessions.list',
        { includeArchived: true, limit: 500 },
        { loopback: true, signal: AbortSignal.timeout(10_000) },
      )) as { sessions: Array<{ sessionId: string; cwd: string }> }
      const row = sessions.find((s) => s.sessionId === sessionId)
      if (!row)
        throw new ApiError('SESSION_NOT_FOUND', `files.search: no session ${JSON.stringify(sessionId)}`, {
          field: 'sessionId',
        })
      return row.cwd
    }
    api.register(filesSearch, async ({ sessionId, query, limit }) => {
      const cwd = await cwdOf(sessionId)
      let found: Listing
      try {
        found = await listing(inner.subprocess, cwd)
      } catch (error) {
        throw new ApiError('UNAVAILABLE', `files.search: ${(error as Error).message}`)
      }
      return {
        files: rank(found.files, query.trim().replace(/^@/, ''), limit).map((path) => ({ path })),
        truncated: found.truncated,
      }
    })
  })
}

export default { name, Config, apply }
