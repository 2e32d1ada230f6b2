// @dsh/ui-reference/client: two `@` sources of `ctx.inputTriggers`. Files: the session's
// workspace files from `files.search` (fuzzy, .gitignore respected); a pick inserts `@path`, which
// @dsh/file-reference expands into the file's content when the message is sent. Sessions: other
// sessions of the catalog by title; a pick inserts `@session:<id>`, which
// @dsh/session-reference expands into that session's summary. MCP resources: the resources of the
// servers of the session's live agents, from `mcp.resources`; a pick inserts `@server:uri`,
// which @dsh/mcp-client expands into the resource's text. A resource template opens a small form
// for its variables first (template-form.tsx) and inserts the filled URI.
import type { Context } from 'cordis'
import { installStyles } from '@dsh/client-runtime'
import { filesSearch } from '@dsh/file-reference/contract'
import { MCP_RESOURCES_CHANGED, mcpResources } from '@dsh/mcp-client/contract'
import { fuzzyScore, replaceRange } from '@dsh/ui-input-trigger/shared'
import { FORM_CSS, templateForm } from './template-form.tsx'

export const NAMESPACE = 'reference'
export const name = '@dsh/ui-reference'
export const inject = ['slots', 'locale', 'remote', 'connection', 'catalog', 'inputTriggers']

const en = {
  files: 'Files',
  sessions: 'Sessions',
  untitled: '(untitled)',
  resources: 'MCP resources',
  template: 'template',
  templateTitle: 'Fill in {template}',
  templateEmpty: '"{name}" is empty: a resource template needs a value for each of its variables.',
  templateInsert: 'Insert',
  templateCancel: 'Cancel',
}
const zh: Record<keyof typeof en, string> = {
  files: '文件',
  sessions: '会话',
  untitled: '(无标题)',
  resources: 'MCP 资源',
  template: '模板',
  templateTitle: '填写 {template}',
  templateEmpty: '"{name}" 为空：资源模板的每个变量都需要一个值。',
  templateInsert: '插入',
  templateCancel: '取消',
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  const t = (key: keyof typeof en, vars?: Record<string, string>) => ctx.locale.t(NAMESPACE, key, vars)

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
 * Registers the MCP resources source: the resources and templates of the servers the session's
 * live agents see (global and each agent's own scope's) from `mcp.resources`; a pick inserts
 * `@server:uri` and marks it as a reference, which @dsh/mcp-client expands into the resource's text
 * when the message is sent. A template asks for its variables first (a `{variable}` left unfilled
 * names no resource the server can read). A host without the method lists none.
 */
function registerMcpResources(ctx: Context, t: (key: keyof typeof en) => string): void {
  installStyles(ctx, name, FORM_CSS, 'ui-reference: template form stylesheet')
  // A filled template: its URI replaces the `@query` the menu was opened on, as a picked reference.
  const { open, Form } = templateForm(NAMESPACE, (filling, uri) => {
    const token = `@${filling.server}:${uri}`
    const { input, match } = filling
    const intact = input.text.slice(match.start, match.end) === `@${match.query}`
    const at = intact ? match : { start: input.text.length, end: input.text.length }
    const pad = !intact && input.text && !/\s$/.test(input.text) ? ' ' : ''
    const { text, caret } = replaceRange(input.text, at.start, at.end, `${pad}${token} `)
    ctx.inputTriggers.addReference(filling.sessionId, token, { kind: 'resource', server: filling.server, uri })
    input.setText(text, caret)
  })
  ctx.slots.register('app.overlay', { id: 'ui-reference-template', order: 11, component: Form })
  // The host says when the servers' lists may have changed: an open `@` menu asks again.
  ctx.effect(
    () =>
      ctx.connection.onHost((event) => {
        if (event.type === MCP_RESOURCES_CHANGED) ctx.inputTriggers.refresh('reference-mcp-resources')
      }),
    'ui-reference: follow the MCP servers',
  )
  const templates = new Map<string, { server: string; uri: string; name: string }>()
  ctx.inputTriggers.register({
    id: 'reference-mcp-resources',
    char: '@',
    group: t('resources'),
    order: 5,
    async candidates(query, { sessionId }, signal) {
      const { resources } = await ctx.remote
        .call(mcpResources, { sessionId, query, limit: 10 }, { signal })
        .catch(() => ({ resources: [] }))
      return resources.map((r) => {
        const detail = `${r.name}${r.description ? ` · ${r.description}` : ''}${r.via ? ` · ${r.via}` : ''}`
        if (!r.template)
          return {
            id: `mcp:${r.server}:${r.uri}`,
            label: `${r.server}:${r.uri}`,
            detail,
            insert: `@${r.server}:${r.uri}`,
            reference: { kind: 'resource' as const, server: r.server, uri: r.uri },
          }
        const id = `mcp-template:${r.server}:${r.uri}`
        templates.set(id, { server: r.server, uri: r.uri, name: r.name })
        return { id, label: `${r.server}:${r.uri}`, detail: `${t('template')} · ${detail}` }
      })
    },
    pick(candidate, { sessionId }, input, match) {
      const template = templates.get(candidate.id)
      if (template)
        return open.set({
          sessionId,
          server: template.server,
          template: template.uri,
          name: template.name,
          input,
          match,
        })
      const { text, caret } = replaceRange(
        input.text,
        match.start,
        match.end,
        `${candidate.insert ?? candidate.label} `,
      )
      input.setText(text, caret)
    },
  })
}

export default { name, inject, apply }
