// `--continue` in the e2b world: the continued session's sandbox (named by its log's newest
// `e2b/sandbox` event) is reconnected through the SDK, a paused one resumed, and becomes this
// run's own; one that is gone is said once and replaced, one that cannot be reached is kept.
import type { Context } from 'cordis'
import { RateLimitError, Sandbox, SandboxNotFoundError, type SandboxOpts } from 'e2b'
import { rootSessions, tries } from './calls.ts'
import { E2bError, REMOTE_STATE_DIR, type E2bConfig, type SandboxLogEvent, type Slot } from './types.ts'
import { firstLine, isTransient } from './util.ts'

/** What the reconnect uses of the e2b service: its config, shared state and a few of its steps. */
export interface ReconnectOwner {
  readonly config: E2bConfig
  readonly home: Context
  /** The service's state object (mutated in place). */
  readonly state: { sessions?: Context['sessions']; notices: string[]; fatal?: E2bError }
  /** The run's own slot (the continued session's sandbox becomes its sandbox). */
  readonly root: Slot
  readonly created: Map<string, Sandbox>
  /** Sandboxes whose starting tree was recorded (only those can produce a patch). */
  readonly baselined: Set<string>
  log(slot: Slot, event: SandboxLogEvent): void
  adopt(slot: Slot, sandbox: Sandbox): void
  withRetries(what: string, call: () => Promise<Sandbox>): Promise<Sandbox>
  /** A line for the user now (a TUI's transcript, else stderr). */
  notify(line: string): void
}

/**
 * `--continue`: the sandbox the continued session last ran in (its log's newest `e2b/sandbox`,
 * unless that says it was killed or lost), reconnected through the SDK (a paused one resumes).
 * It is then this run's own: ended per `onExit`, its next patch taken from where the last one
 * stopped. When it is gone, that is said once (stderr and a `lost` event) and undefined
 * answered, so a new sandbox is created.
 */
export async function reconnectContinued(owner: ReconnectOwner, options: SandboxOpts): Promise<Sandbox | undefined> {
  const { config, root } = owner
  if (root.resumeChecked) return undefined
  root.resumeChecked = true
  const last = rootSessions(owner.state.sessions)
    .map((session) => session.last('e2b/sandbox')?.data)
    // A sandbox of a session's own folder is not the run's (see `within`).
    .find((event) => event !== undefined && event.workspace === undefined)
  if (!last || last.action === 'killed' || last.action === 'lost') return undefined
  const id = last.sandboxId
  let sandbox: Sandbox
  try {
    sandbox = await owner.withRetries('connect to', () =>
      Sandbox.connect(id, { ...options, timeoutMs: config.timeoutMs }),
    )
  } catch (error) {
    if (error instanceof E2bError && (error.code === 'AUTH' || error.code === 'MISSING_KEY')) throw error
    const cause = error instanceof E2bError ? error.cause : error
    if (!(cause instanceof SandboxNotFoundError)) {
      // Not known to be gone (E2B kept answering 429/5xx, or could not be reached): it may still
      // exist, paused or running, so it is neither replaced (a second machine) nor forgotten (a
      // leak). This run's remote calls fail at once with the same sentence (no retry storm).
      const why = `${firstLine(cause instanceof Error ? cause.message : String(cause))}${tries(cause, config.retries)}`
      const line = `could not reconnect to the session's E2B sandbox ${id} (${why}); it was left as it was: continue the session again later, or end it with: e2b sandbox kill ${id}`
      owner.state.notices.push(line)
      throw (owner.state.fatal = new E2bError(
        isTransient(cause) && cause instanceof RateLimitError ? 'RATE_LIMIT' : 'UNAVAILABLE',
        line,
        { cause },
      ))
    }
    const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0]
    owner.log(root, {
      sandboxId: id,
      template: config.template,
      action: 'lost',
      reason: `gone before this run: ${reason}`,
    })
    owner.notify(
      `the session's E2B sandbox ${id} is gone (killed or expired); starting a new one (its files are lost; saved patches stay)`,
    )
    return undefined
  }
  owner.created.set(sandbox.sandboxId, sandbox)
  owner.adopt(root, sandbox)
  if (config.patch.enabled) {
    const probe = await sandbox.commands
      .run(`test -d ${REMOTE_STATE_DIR}/baseline.git && echo yes || echo no`, {
        user: 'root',
        requestTimeoutMs: config.requestTimeoutMs,
      })
      .catch(() => undefined)
    if (probe?.stdout.trim() === 'yes') owner.baselined.add(sandbox.sandboxId)
  }
  owner.log(root, { sandboxId: sandbox.sandboxId, template: config.template, action: 'connected' })
  owner.home.logger('e2b').info('sandbox %s reconnected for a continued session', sandbox.sandboxId)
  return sandbox
}
