// Replays the model streams of a recorded session: the Nth model request made while this plugin is
// loaded is answered with the chunks of the Nth recorded step.
import { resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { LlmError, type LlmAdapter, type LlmRequest, type ModelInfo, type StreamChunk } from '@dsh/llm'
import { loadRecording, type Recording, type RecordedStep } from './recording.ts'

export * from './recording.ts'

export const name = 'llm-replay'
export const inject = ['llm']

export interface Config {
  /** The recorded session JSONL; a relative path resolves from the process working directory. */
  file: string
  /** When set, one replay-only adapter per route (with a catalog); else a catch-all `llm/stream` listener. */
  providers?: string[]
  /** Fail a request whose provider, model, turn or step differs from the recorded step. */
  strict?: boolean
}

export const Config: Schema<Config> = Schema.object({
  file: Schema.string().required().description('Recorded session JSONL file to replay.'),
  providers: Schema.array(Schema.string()).description(
    'Provider routes to register replay adapters for; omitted: intercept every request.',
  ),
  strict: Schema.boolean().default(false).description('Reject requests that diverge from the recording.'),
})

/** Context window reported by the replay catalog; a recording carries no catalog of its own. */
const REPLAY_CONTEXT_WINDOW = 128_000

/** The cursor over a loaded recording; exported for tests and tools that drive replay by hand. */
export class ReplayCursor {
  private position = 0
  constructor(
    readonly recording: Recording,
    readonly strict = false,
  ) {}

  /** Steps answered so far. */
  get served(): number {
    return this.position
  }

  get remaining(): number {
    return this.recording.steps.length - this.position
  }

  /** Claims the next step for `request` now; problems surface when the stream is iterated. */
  next(request: LlmRequest): AsyncIterable<StreamChunk> {
    const ordinal = ++this.position
    const step = this.recording.steps[ordinal - 1]
    if (!step) {
      const count = this.recording.steps.length
      return failing(
        new LlmError(
          'EMPTY_RESPONSE',
          `llm-replay: model request ${ordinal} has no recorded response; the recording ${this.recording.file} has ${count} step${count === 1 ? '' : 's'}`,
          { provider: request.provider },
        ),
      )
    }
    if (this.strict) {
      const problems = divergence(step, request)
      if (problems.length) {
        return failing(
          new LlmError(
            'BAD_REQUEST',
            `llm-replay: model request ${ordinal} diverges from turn ${step.turn} step ${step.step} of ${this.recording.file}: ${problems.join('; ')}`,
            { provider: request.provider },
          ),
        )
      }
    }
    return play(step, request)
  }
}

function divergence(step: RecordedStep, request: LlmRequest): string[] {
  const problems: string[] = []
  if (step.provider !== undefined && request.provider !== step.provider) {
    problems.push(`provider is '${request.provider}', recorded '${step.provider}'`)
  }
  if (step.model !== undefined && request.model !== step.model)
    problems.push(`model is '${request.model}', recorded '${step.model}'`)
  const meta = request.metadata ?? {}
  if (typeof meta.turn === 'number' && meta.turn !== step.turn)
    problems.push(`turn is ${meta.turn}, recorded ${step.turn}`)
  if (typeof meta.step === 'number' && meta.step !== step.step)
    problems.push(`step is ${meta.step}, recorded ${step.step}`)
  return problems
}

async function* play(step: RecordedStep, request: LlmRequest): AsyncGenerator<StreamChunk> {
  for (const chunk of step.chunks) {
    if (request.signal?.aborted)
      throw new LlmError('ABORTED', 'llm-replay: request aborted', { provider: request.provider })
    yield structuredClone(chunk)
  }
  if (step.error) throw new LlmError(step.error.code, step.error.message, { provider: request.provider })
}

function failing(error: LlmError): AsyncIterable<StreamChunk> {
  return { [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }) }
}

/** The replay catalog for `route`: models recorded for it, else every recorded model, else `replay`. */
export function replayCatalog(recording: Recording, route: string): ModelInfo[] {
  const own = recording.models.filter((m) => m.provider === route).map((m) => m.model)
  const ids = own.length ? own : [...new Set(recording.models.map((m) => m.model))]
  return (ids.length ? ids : ['replay']).map((id) => ({
    provider: route,
    id,
    displayName: `${id} (replay)`,
    contextWindow: REPLAY_CONTEXT_WINDOW,
    supportsTools: true,
  }))
}

export function apply(ctx: Context, config: Config): void {
  const file = resolve(config.file)
  const cursor = new ReplayCursor({ ...loadRecording(file) }, config.strict ?? false)
  if (config.providers?.length) {
    for (const route of new Set(config.providers)) {
      const models = replayCatalog(cursor.recording, route)
      const adapter: LlmAdapter = {
        provider: route,
        stream: (request) => cursor.next(request),
        listModels: () => models.map((m) => ({ ...m })),
      }
      ctx.llm.registerAdapter(adapter)
    }
    return
  }
  // Catch-all: answer every model request here, ahead of any other listener and of the adapters.
  ctx.on('llm/stream', (request) => cursor.next(request), { prepend: true })
}

export default { name, inject, Config, apply }
