// @dsh/desktop-notifications: a desktop notification when a turn finishes (after a long enough
// turn), when an approval waits for the user and when the model asks the user a question. The
// notifier (`notify-send` by default) is started through ctx.subprocess with a fixed argv (no
// shell), a scrubbed environment and a kill deadline; where it is not installed nothing is shown.
// Under `dsh web` (when ctx.api is there) each of those moments is also published to the pages as
// a `notifications/attention` host event, which the browser half (@dsh/ui-notifications) shows
// as a browser notification.
import { accessSync, constants } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import type {} from '@dsh/subprocess'
import type {} from '@dsh/user-approval'
import type {} from '@dsh/user-questions'
import type {} from '@dsh/api-gateway'
import { ATTENTION_EVENT, type AttentionEvent } from './contract.ts'

export * from './contract.ts'

export const name = 'desktop-notifications'
export const inject = ['subprocess']

export type NotifyOn = 'turn-end' | 'approval' | 'question'

export interface Config {
  native: boolean
  command: string
  appName: string
  on: NotifyOn[]
  minTurnMs: number
  urgency: 'low' | 'normal' | 'critical'
  maxBodyChars: number
  timeoutMs: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  native: Schema.boolean()
    .default(true)
    .description('Run the desktop notifier on the host (false: only the pages of dsh web are told).'),
  command: Schema.string()
    .min(1)
    .default('notify-send')
    .description(
      'The notifier: a name looked up on PATH, or an absolute path. Called as `command --app-name=A --urgency=U TITLE BODY`.',
    ),
  appName: Schema.string().min(1).default('dsh').description('--app-name of each notification.'),
  on: Schema.array(Schema.union(['turn-end', 'approval', 'question'] as const))
    .default(['turn-end', 'approval', 'question'])
    .description('What notifies: a finished turn, an approval waiting, a question to the user.'),
  minTurnMs: Schema.natural()
    .default(10000)
    .description('A finished turn notifies only when it took at least this long (0: every turn).'),
  urgency: Schema.union(['low', 'normal', 'critical'] as const)
    .default('normal')
    .description('--urgency of turn notifications; approvals and questions are always critical.'),
  maxBodyChars: Schema.natural().min(20).default(200).description('Longest body text; longer text is cut with "…".'),
  timeoutMs: Schema.natural().min(100).default(5000).description('The notifier is killed after this long.'),
}) as Schema<Partial<Config>, Config>

/** The executable `command` names, or undefined when it is not there (checked once, at load). */
export function findCommand(command: string, path = process.env.PATH ?? ''): string | undefined {
  const candidates = isAbsolute(command)
    ? [command]
    : command.includes('/')
      ? []
      : path
          .split(delimiter)
          .filter(Boolean)
          .map((dir) => join(dir, command))
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {
      // not here
    }
  }
  return undefined
}

const oneLine = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

export function apply(ctx: Context, config: Config): void {
  const logger = ctx.logger('desktop-notifications')
  if (config.command.includes('/') && !isAbsolute(config.command))
    throw new Error(
      `desktop-notifications: command ${JSON.stringify(config.command)} must be a name on PATH or an absolute path`,
    )
  const cut = (text: string) => oneLine(text, config.maxBodyChars)
  const turnTitle = (reason: string) => (reason === 'completed' ? 'dsh: turn finished' : `dsh: turn ended (${reason})`)
  const APPROVAL = 'dsh needs your approval'
  const QUESTION = 'dsh has a question'
  const questionOf = (request: { questions: readonly { question: string }[] }) =>
    request.questions[0]?.question ?? 'a question is waiting'

  // The pages of dsh web: every moment is told (the page decides whether to show it: only while
  // hidden, and only when the user turned notifications on). No minTurnMs: a hidden page is the
  // sign that the user looked away.
  ctx.inject(['api'], (inner) => {
    const tell = (
      sessionId: string | undefined,
      kind: AttentionEvent['kind'],
      title: string,
      body: string,
      reason?: string,
    ) => {
      if (!sessionId) return
      const event: AttentionEvent = {
        type: ATTENTION_EVENT,
        sessionId,
        kind,
        title: oneLine(title, 100),
        body: cut(body),
        ...(reason ? { reason } : {}),
      }
      inner.api.publishHost(event)
    }
    if (config.on.includes('turn-end'))
      inner.on('agent/turn-end', (agent, result) =>
        tell(
          agent.session.id,
          'turn-end',
          turnTitle(result.reason),
          result.text || `${result.steps} step(s), no reply text`,
          result.reason,
        ),
      )
    if (config.on.includes('approval'))
      inner.on('approval/requested', (request) => tell(request.sessionId, 'approval', APPROVAL, request.title))
    if (config.on.includes('question'))
      inner.on('questions/asked', (request) => tell(request.sessionId, 'question', QUESTION, questionOf(request)))
  })

  if (!config.native) return
  const file = findCommand(config.command)
  if (!file) {
    logger.debug('%s is not installed (not on PATH): no desktop notifications', config.command)
    return
  }
  const inflight = new Set<Promise<unknown>>()

  const notify = (title: string, body: string, urgency: Config['urgency'], cwd: string) => {
    let handle: ReturnType<Context['subprocess']['spawn']>
    try {
      handle = ctx.subprocess.spawn({
        file,
        args: [`--app-name=${config.appName}`, `--urgency=${urgency}`, oneLine(title, 100), cut(body)],
        cwd,
        env: { base: 'scrubbed' },
        kill: { graceMs: 500 },
        signal: AbortSignal.timeout(config.timeoutMs),
        retentionMode: 'none',
      })
    } catch (error) {
      logger.warn('%s could not start: %s', config.command, (error as Error).message)
      return
    }
    const done = handle.exited.then(
      (exit) => {
        if (exit.code !== 0) logger.debug('%s exited with %s', config.command, exit.code ?? exit.signal)
      },
      () => {},
    )
    inflight.add(done)
    void done.finally(() => inflight.delete(done))
  }

  // A one-shot stops right after its turn: let a notification already started finish.
  ctx.on('app/stopping', async () => {
    await Promise.all([...inflight])
  })

  if (config.on.includes('turn-end')) {
    ctx.on('agent/turn-end', (agent, result) => {
      const start = agent.session.last('turn/start')
      if (config.minTurnMs > 0 && (!start || Date.now() - start.time < config.minTurnMs)) return
      notify(
        turnTitle(result.reason),
        result.text || `${result.steps} step(s), no reply text`,
        config.urgency,
        agent.cwd,
      )
    })
  }
  if (config.on.includes('approval')) {
    ctx.on('approval/requested', (request) => {
      notify(APPROVAL, request.title, 'critical', process.cwd())
    })
  }
  if (config.on.includes('question')) {
    ctx.on('questions/asked', (request) => {
      notify(QUESTION, questionOf(request), 'critical', process.cwd())
    })
  }
}
