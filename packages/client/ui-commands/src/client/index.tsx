// @dsh/ui-commands/client: the `/` source of `ctx.inputTriggers`. Typing `/` at the start of the
// composer lists every registered command (name, arguments, description); picking one inserts
// `/name `; a `commands/changed` from the host refreshes an open menu. Enter on a line naming a
// listed command runs it through `commands.execute` (never a model turn), clears the composer and
// shows the command's output or error above it.
import type { Context } from 'cordis'
import { installStyles, Store, useStore, useT } from '@dsh/client-runtime'
import { COMMANDS_CHANGED, type CommandInfo } from '@dsh/web-protocol'
import type {} from '@dsh/ui-input-trigger/shared'
import { commandOfLine, matchCommands } from '../commands.ts'

export const NAMESPACE = 'commands'
export const name = '@dsh/ui-commands'
export const inject = ['slots', 'locale', 'remote', 'connection', 'inputTriggers']

const en = {
  group: 'Commands',
  running: 'Running {line}…',
  failed: '{name} failed: {message}',
  done: '{name} done',
  dismiss: 'Dismiss',
}
const zh: Record<keyof typeof en, string> = {
  group: '命令',
  running: '正在运行 {line}…',
  failed: '{name} 失败: {message}',
  done: '{name} 已完成',
  dismiss: '关闭',
}

interface Outcome {
  line: string
  name: string
  state: 'running' | 'ok' | 'error'
  output?: string
}

const CSS = `
.dsh-command-result { position: fixed; right: 24px; bottom: 24px; z-index: 25; max-width: min(640px, 80vw); max-height: 40vh; overflow: auto;
  background: var(--bg, #fff); color: var(--fg, #111); border: 1px solid var(--border, #ddd); border-radius: 8px; box-shadow: 0 6px 24px rgb(0 0 0 / .18); padding: 8px 12px; font-size: 13px; }
.dsh-command-result pre { white-space: pre-wrap; margin: 6px 0 0; font-size: 12px; }
.dsh-command-result.error { border-color: var(--danger, #c0362c); }
.dsh-command-result header { display: flex; gap: 12px; justify-content: space-between; align-items: center; }
`

const DOWNLOAD = /(\/[A-Za-z0-9_./-]+\.zip)\b/

/** Same-origin download paths in command output (e.g. `/export/<id>.zip`) become links. */
function linkify(text: string) {
  const parts = text.split(DOWNLOAD)
  return parts.map((part, i) =>
    i % 2 === 1 ? (
      // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one split string are positional and may repeat; the index is their identity
      <a key={i} href={part} download data-command-link="true">
        {part}
      </a>
    ) : (
      part
    ),
  )
}

/** Starts the download of a same-origin path, as a click on its link would. */
function download(path: string): void {
  if (typeof document === 'undefined') return
  const link = document.createElement('a')
  link.href = path
  link.download = ''
  link.hidden = true
  document.body.append(link)
  link.click()
  link.remove()
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-commands: stylesheet')
  let known: CommandInfo[] = []
  let loading: Promise<CommandInfo[]> | undefined
  const load = (fresh = false) => {
    if (fresh || !loading) {
      loading = ctx.remote.call('commands.list', {}).then((r) => (known = r.commands))
      loading.catch(() => (loading = undefined))
    }
    return loading
  }
  void load().catch(() => {})
  // The host says when its list changed (an MCP server's prompt arrived, a plugin registered a
  // command): read it again and refresh an open `/` menu, so what it lists is current while open.
  ctx.effect(
    () =>
      ctx.connection.onHost((event) => {
        if (event.type !== COMMANDS_CHANGED && event.type !== 'connection/reset') return
        load(true).then(
          () => ctx.inputTriggers.refresh('commands'),
          () => {},
        )
      }),
    'ui-commands: follow the command list',
  )
  const result = new Store<Outcome | undefined>(undefined)
  const t = (key: keyof typeof en, vars?: Record<string, string | number>) => ctx.locale.t(NAMESPACE, key, vars)

  ctx.inputTriggers.register({
    id: 'commands',
    char: '/',
    group: t('group'),
    async candidates(query) {
      // The list is re-read each time the menu opens, and when the host says it changed.
      const commands = await load(query === '')
      return matchCommands(commands, query).map((c) => ({
        id: c.name,
        label: `/${c.name}${c.usage ? ` ${c.usage}` : ''}`,
        detail: c.description,
        insert: `/${c.name}`,
      }))
    },
    matchEnter(text, session) {
      const command = commandOfLine(known, text)
      if (!command) return undefined
      return async (input) => {
        const line = text.trim()
        input.setText('')
        result.set({ line, name: `/${command.name}`, state: 'running' })
        try {
          const r = await ctx.remote.call('commands.execute', { sessionId: session.sessionId, line })
          result.set({
            line,
            name: `/${command.name}`,
            state: r.ok ? 'ok' : 'error',
            output: r.ok ? r.output : r.error?.message,
          })
          if (!r.ok && !input.text) input.setText(line)
          // A command that answers with one download (`/export`) starts it: one Enter, no
          // second click. The link stays in the panel in case the browser held it back.
          const paths = r.ok && r.output ? r.output.split(DOWNLOAD).filter((_, i) => i % 2 === 1) : []
          if (paths.length === 1) download(paths[0])
        } catch (error) {
          result.set({ line, name: `/${command.name}`, state: 'error', output: (error as Error).message })
          // Nothing typed is lost: a refused line goes back into the empty composer.
          if (!input.text) input.setText(line)
        }
      }
    },
  })

  function Result() {
    const tr = useT(NAMESPACE)
    const outcome = useStore(result)
    if (!outcome) return null
    const title =
      outcome.state === 'running'
        ? tr('running', { line: outcome.line })
        : outcome.state === 'ok'
          ? tr('done', { name: outcome.name })
          : tr('failed', { name: outcome.name, message: '' }).replace(/:\s*$/, '')
    return (
      <div
        className={`dsh-command-result${outcome.state === 'error' ? ' error' : ''}`}
        data-command-result={outcome.state}
        role={outcome.state === 'error' ? 'alert' : 'status'}
      >
        <header>
          <strong>{title}</strong>
          <button type="button" onClick={() => result.set(undefined)}>
            {tr('dismiss')}
          </button>
        </header>
        {outcome.output ? <pre>{linkify(outcome.output)}</pre> : null}
      </div>
    )
  }
  ctx.slots.register('app.overlay', { id: 'ui-commands', order: 20, component: Result })
}

export default { name, inject, apply }
