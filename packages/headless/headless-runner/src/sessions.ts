// Stored sessions for the one-shot: `dsh sessions` (the table or JSON), `-r` without an id (the
// recent ones of this directory), and opening the session `--resume ID` / `--continue` name.
import type { Context } from 'cordis'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session-persistence'
import { continuable, ExitCode, latestContinuable, resumeStored, sessionTable } from '@dsh/surface-kit'
import { UsageError, type HeadlessOptions } from './args.ts'
import type { Io } from './io.ts'

export interface SessionRow {
  id: string
  cwd: string
  createdAt: number
  updatedAt?: number
  title?: string
  firstPrompt?: string
  turns: number
  damaged?: string
  parentSession?: { sessionId: string }
}

const durable = (ctx: Context) => ctx.get('durableSessions')

export async function listSessions(ctx: Context, options: HeadlessOptions, io: Io): Promise<number> {
  const store = durable(ctx)
  if (!store) {
    io.stderr.write('dsh: listing sessions needs a session-persistence row in the profile\n')
    return ExitCode.failed
  }
  const cwd = process.cwd()
  const sessions = (await store.list()).filter((row) => options.all || (row.cwd === cwd && continuable(row)))
  if (options.outputFormat !== 'text') {
    io.stdout.write(JSON.stringify(sessions) + '\n')
    return 0
  }
  if (sessions.length === 0) {
    io.stderr.write(
      options.all
        ? 'dsh: no stored sessions\n'
        : `dsh: no stored sessions for ${cwd} (dsh sessions --all lists every one)\n`,
    )
    return 0
  }
  io.stdout.write(sessionTable(sessions, options.all))
  return 0
}

/** `-r` without an id: this directory's recent sessions on stderr, and exit 2 asking for one. */
export async function pickSession(ctx: Context, io: Io): Promise<number> {
  const store = durable(ctx)
  if (!store) {
    io.stderr.write('dsh: --resume needs a session-persistence row in the profile\n')
    return ExitCode.usage
  }
  const cwd = process.cwd()
  const recent = (await store.list()).filter((row) => row.cwd === cwd && continuable(row)).slice(0, 10)
  if (recent.length === 0) {
    io.stderr.write(
      `dsh: --resume needs a session id, and there is no stored session for ${cwd} (dsh sessions --all lists every one)\n`,
    )
    return ExitCode.usage
  }
  io.stderr.write(
    `dsh: --resume needs a session id; recent sessions here:\n${sessionTable(recent, false)}dsh: run again with: dsh -r ID "task"\n`,
  )
  return ExitCode.usage
}

export async function openSession(ctx: Context, options: HeadlessOptions, io: Io): Promise<Session | undefined> {
  if (options.resume === undefined && !options.continue) return undefined
  const store = durable(ctx)
  if (!store) throw new UsageError('--resume/--continue need a session-persistence row in the profile')
  let id = options.resume
  if (options.continue) {
    // The newest session of this directory that ran a turn (a `/help` run leaves an empty one).
    const latest = latestContinuable(await store.list(), process.cwd())
    if (!latest) throw new UsageError(`--continue: no stored session for ${process.cwd()}`)
    id = latest.id
  }
  const opened = await resumeStored(store, id!)
  for (const warning of opened.loaded.warnings) io.stderr.write(`dsh: warning: ${warning}\n`)
  return opened.session
}
