// @dsh/ui-skill/client: the Skills group of the composer's `/` menu. Typing `/` at the start of
// the input lists the skills the session's user can invoke (`skill.list`, the skills of the
// session's working directory), filtered by `startsWith(query)`; a user-only skill wears a marker
// in the active language. Enter on a line naming one runs it through `commands.execute`, where
// @dsh/tool-skill's command source sends the skill's body (and the request after the name) as the
// user's message. Catalogs are cached per session with one fetch in flight; a reconnect clears them.
import type { Context } from 'cordis'
import { Store, useStore, useT } from '@dsh/client-runtime'
import type {} from '@dsh/ui-input-trigger/shared'
import { skillList, type WireSkill } from '../contract.ts'

export const NAMESPACE = 'skill'
export const name = '@dsh/ui-skill'
export const inject = ['slots', 'locale', 'remote', 'connection', 'inputTriggers']

const en = {
  group: 'Skills',
  userOnly: '(you only)',
  failed: 'The skill /{name} did not start: {message}',
  dismiss: 'Dismiss',
}
const zh: Record<keyof typeof en, string> = {
  group: '技能',
  userOnly: '(仅限用户)',
  failed: '技能 /{name} 未能启动: {message}',
  dismiss: '关闭',
}

const LINE = /^\/([a-z][a-z0-9-]*)(?:\s|$)/

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  const t = (key: keyof typeof en, vars?: Record<string, string | number>) => ctx.locale.t(NAMESPACE, key, vars)
  // sessionId -> the catalog (settled) or the one fetch in flight.
  const catalogs = new Map<string, Promise<WireSkill[]>>()
  const known = new Map<string, WireSkill[]>()
  const catalog = (sessionId: string): Promise<WireSkill[]> => {
    let entry = catalogs.get(sessionId)
    if (!entry) {
      entry = ctx.remote.call(skillList, { sessionId }).then((r) => {
        known.set(sessionId, r.skills)
        return r.skills
      })
      // A failed fetch is not cached: the next menu asks again.
      entry.catch(() => catalogs.delete(sessionId))
      catalogs.set(sessionId, entry)
    }
    return entry
  }
  ctx.effect(
    () =>
      ctx.connection.onHost((event) => {
        if (event.type !== 'connection/reset') return
        catalogs.clear()
        known.clear()
      }),
    'ui-skill: reset on reconnect',
  )
  const failure = new Store<{ name: string; message: string } | undefined>(undefined)

  ctx.inputTriggers.register({
    id: 'skill',
    char: '/',
    group: t('group'),
    order: 10,
    async candidates(query, session) {
      // A bare `/` re-reads the catalog (a skill may have been added to the directory).
      if (query === '') catalogs.delete(session.sessionId)
      const skills = await catalog(session.sessionId)
      const prefix = query.toLowerCase()
      return skills
        .filter((skill) => skill.name.startsWith(prefix))
        .map((skill) => ({
          id: `skill:${skill.name}`,
          label: `/${skill.name}`,
          detail: skill.modelInvocable ? skill.description : `${t('userOnly')} ${skill.description}`,
          insert: `/${skill.name}`,
        }))
    },
    matchEnter(text, session) {
      const hit = LINE.exec(text.trim())
      if (!hit || !known.get(session.sessionId)?.some((skill) => skill.name === hit[1])) return undefined
      const skillName = hit[1]
      return async (input) => {
        const line = text.trim()
        input.setText('')
        failure.set(undefined)
        let message: string | undefined
        try {
          const r = await ctx.remote.call('commands.execute', { sessionId: session.sessionId, line })
          if (!r.ok) message = r.error?.message ?? 'failed'
        } catch (error) {
          message = (error as Error).message
        }
        if (message === undefined) return
        failure.set({ name: skillName, message })
        // Nothing typed is lost: a refused line goes back into the empty composer.
        if (!input.text) input.setText(line)
      }
    },
  })

  function Failure() {
    const tr = useT(NAMESPACE)
    const shown = useStore(failure)
    if (!shown) return null
    return (
      <div className="dsh-command-result error" role="alert" data-skill-error={shown.name}>
        <header>
          <strong>{tr('failed', shown)}</strong>
          <button type="button" onClick={() => failure.set(undefined)}>
            {tr('dismiss')}
          </button>
        </header>
      </div>
    )
  }
  ctx.slots.register('app.overlay', { id: 'ui-skill', order: 21, component: Failure })
}

export default { name, inject, apply }
