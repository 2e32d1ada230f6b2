// @dsh/ui-reference/client: two `@` sources of `ctx.inputTriggers`. Files: the session's
// workspace files from `files.search` (fuzzy, .gitignore respected); a pick inserts `@path`, which
// @dsh/file-reference expands into the file's content when the message is sent. Sessions: other
// sessions of the catalog by title; a pick inserts `@session:<id>`, which
// @dsh/session-reference expands into that session's summary. MCP resources: the resources of the
// servers the session sees, from `mcp.resources` (templates left out); a pick inserts
// `@server:uri`, which @dsh/mcp-client expands into the resource's text.
import type { Context } from 'cordis'
import { filesSearch } from '@dsh/file-reference/contract'
import { mcpResources } from '@dsh/mcp-client/contract'
import { fuzzyScore } from '@dsh/ui-input-trigger/shared'

export const NAMESPACE = 'reference'
export const name = '@dsh/ui-reference'
export const inject = ['locale', 'remote', 'catalog', 'inputTriggers']

const en = {
  files: 'Files',
  sessions: 'Sessions',
  untitled: '(untitled)',
  resources: 'MCP resources',
}
const zh: Record<keyof typeof en, string> = {
  files: '文件',
  sessions: '会话',
  untitled: '(无标题)',
  resources: 'MCP 资源',
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  const t = (key: keyof typeof en) => ctx.locale.t(NAMESPACE, key)

  ctx.inputTriggers.register({
    id: 'reference-files',
    char: '@',
    group: t('files'),
    order: 0,
    async candidates(query, { sessionId }, signal) {
      const { files } = await ctx.remote.call(filesSearch, { sessionId, query, limit: 20 }, { signal })
      return files.map((f) => ({
        id: `file:${f.path}`,
        label: f.path,
        insert: `@${f.path}`,
        reference: { kind: 'file' as const, path: f.path },
      }))
    },
  })

  registerMcpResources(ctx, t)

  ctx.inputTriggers.register({
    id: 'reference-sessions',
    char: '@',
    group: t('sessions'),
    order: 10,
    candidates(query, { sessionId }) {
      const scored: Array<{ id: string; title: string; cwd: string; s: number }> = []
      for (const row of ctx.catalog.state.get().sessions) {
        if (row.sessionId === sessionId) continue
        const title = row.title ?? row.firstPrompt ?? t('untitled')
        const s = fuzzyScore(query, title)
        if (s !== undefined) scored.push({ id: row.sessionId, title, cwd: row.cwd, s })
      }
      return scored
        .sort((a, b) => b.s - a.s)
        .slice(0, query ? 8 : 5)
        .map((r) => ({
          id: `session:${r.id}`,
          label: r.title,
          detail: r.cwd,
          insert: `@session:${r.id}`,
          reference: { kind: 'session' as const, sessionId: r.id },
        }))
    },
  })
}

/**
 * Registers the MCP resources source: the resources of the servers the session sees (global and its
 * own scope's) from `mcp.resources`; a pick inserts `@server:uri` and marks it as a reference, which
 * @dsh/mcp-client expands into the resource's text when the message is sent. Resource templates are
 * left out: a `{variable}` left unfilled names no resource the server can read, and the menu has no
 * way to fill it. A host without the method lists none.
 */
function registerMcpResources(ctx: Context, t: (key: keyof typeof en) => string): void {
  ctx.inputTriggers.register({
    id: 'reference-mcp-resources',
    char: '@',
    group: t('resources'),
    order: 5,
    async candidates(query, { sessionId }, signal) {
      const { resources } = await ctx.remote
        .call(mcpResources, { sessionId, query, limit: 10, templates: false }, { signal })
        .catch(() => ({ resources: [] }))
      return resources.map((r) => ({
        id: `mcp:${r.server}:${r.uri}`,
        label: `${r.server}:${r.uri}`,
        detail: `${r.name}${r.description ? ` · ${r.description}` : ''}`,
        insert: `@${r.server}:${r.uri}`,
        reference: { kind: 'resource' as const, server: r.server, uri: r.uri },
      }))
    },
  })
}

export default { name, inject, apply }
