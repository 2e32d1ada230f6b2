// @dsh/tmux-context: opt-in context naming the tmux session, window and pane this agent process
// runs in. On the first step of each turn it runs one read-only probe through `ctx.shell` and, when
// the rendered state differs from its last injection (and the refresh interval allows), prepends a
// sourced message to the step's input. Every failure is a no-op; executor rejections are warnings.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { InjectedContext, PreStepDecision, PreStepPayload } from '@dsh/agent'
import type { MessageSource } from '@dsh/session'
import type { ShellResult } from '@dsh/shell'
import { InjectionIndex } from './history.ts'
import { controllingTty, parseReading, probeCommand, renderMessage, renderState, stateOf } from './reading.ts'

export {
  controllingTty,
  parseReading,
  probeCommand,
  renderMessage,
  renderState,
  stateOf,
  TMUX_FORMAT,
  type TmuxReading,
} from './reading.ts'

export const name = '@dsh/tmux-context'
/** No required services: without `ctx.shell` the plugin stays mounted and does nothing. */
export const inject: string[] = []

export const SOURCE: MessageSource = { kind: 'plugin', plugin: name }

export interface Config {
  refreshIntervalMs: number
  timeoutMs: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  refreshIntervalMs: Schema.natural()
    .default(0)
    .description('Minimum milliseconds between two injections; 0 injects on every turn whose tmux state changed.'),
  timeoutMs: Schema.natural().min(1).default(5_000).description('Timeout of the read-only tmux probe.'),
})

/** Small: the probe prints one line. */
const OUTPUT_BUDGET = { maxBytes: 16_384, headBytes: 8_192, tailBytes: 8_192 }

export function apply(ctx: Context, config: Config): void {
  if (!Number.isSafeInteger(config.refreshIntervalMs) || config.refreshIntervalMs < 0) {
    throw new TypeError(
      `tmux-context: refreshIntervalMs must be a non-negative safe integer, got ${config.refreshIntervalMs}`,
    )
  }
  const logger = ctx.logger('tmux-context')
  const history = new InjectionIndex(name)

  /** Runs the probe; the state lines, or undefined for any reason there is no reading. */
  async function read(cwd: string): Promise<string | undefined> {
    const shell = ctx.get('shell')
    if (!shell) return undefined
    // The harness reads its own terminal from /proc, so the check holds even when the executor
    // confines the probe in its own PID namespace; elsewhere the probe asks `ps` about our pid.
    const self = controllingTty()
    let result: ShellResult
    try {
      const spec = await shell.resolve({
        command: probeCommand(typeof self === 'string' ? self : process.pid),
        cwd,
        timeoutMs: config.timeoutMs,
        output: OUTPUT_BUDGET,
      })
      result = await shell.run(spec)
    } catch (error) {
      logger.warn(
        'the shell executor refused the tmux probe: %s',
        error instanceof Error ? error.message : String(error),
      )
      return undefined
    }
    if (result.status !== 'exited' || result.exitCode !== 0 || result.output.truncated) return undefined
    const reading = parseReading(result.output.head)
    return reading && renderState(reading)
  }

  async function onPreStep(payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> {
    if (payload.step !== 0) return next()
    const { session, cwd } = payload.agent
    const last = history.latest(session)
    if (last && config.refreshIntervalMs > 0 && session.clock() - last.time < config.refreshIntervalMs) return next()
    let state: string | undefined
    try {
      state = await read(cwd)
    } catch (error) {
      // Defensive: nothing about the location may fail a turn.
      logger.warn('reading the tmux location failed: %s', error instanceof Error ? error.message : String(error))
    }
    if (state === undefined || (last && stateOf(last.text) === state)) return next()
    const message: InjectedContext = { content: renderMessage(payload.turn + 1, state), source: SOURCE }
    const decision = await next()
    if (decision.action !== 'enter') return decision
    return { ...decision, messages: [message, ...decision.messages] }
  }

  ctx.on('agent/pre-step', onPreStep, { prepend: true })
}
