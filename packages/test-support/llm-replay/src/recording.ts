// Reads a recorded session JSONL (one `{type, seq, time, data}` envelope a line) and groups the
// model responses by step. Pure: no Cordis, no state beyond the returned value.
import { readFileSync } from 'node:fs'
import {
  BlockAssembler,
  LLM_ERROR_CODES,
  type AssistantMessage,
  type FinishReason,
  type LlmErrorCode,
  type StreamChunk,
  type TokenUsage,
} from '@dsh/llm'

/**
 * The envelope of one logged session event. Structurally the `SessionEvent` of `@dsh/session`,
 * restated here so the reader only depends on the file format.
 */
export interface RecordedEvent {
  type: string
  seq: number
  time: number
  data: { [key: string]: unknown }
}

export interface RecordedStep {
  turn: number
  step: number
  /** The chunks to re-emit: as logged, or synthesized from the step's assistant/message. */
  chunks: StreamChunk[]
  /** True when `chunks` were synthesized because the step logged no `assistant/chunk`. */
  synthesized: boolean
  /** The logged `assistant/message`, if any. */
  message?: AssistantMessage
  interrupted?: boolean
  /** From the last `request/header` before the step. */
  provider?: string
  model?: string
  /** An LLM error that ended this step's stream (from the turn's `turn/end`), re-raised after the chunks. */
  error?: { code: LlmErrorCode; message: string }
  /** 1-based line of the step's first event. */
  line: number
}

export interface Recording {
  file: string
  steps: RecordedStep[]
  /** Every `(provider, model)` pair named by a `request/header`, in first-seen order. */
  models: Array<{ provider: string; model: string }>
}

export class RecordingError extends Error {
  override name = 'RecordingError'
  constructor(
    readonly file: string,
    readonly line: number,
    readonly detail: string,
  ) {
    super(`${file}:${line}: ${detail}`)
  }
}

/** Reads and groups a recorded session JSONL file. Throws RecordingError naming file and line. */
export function loadRecording(path: string): Recording {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new RecordingError(
      path,
      0,
      `cannot read the recording: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    )
  }
  return parseRecording(text, path)
}

interface Building extends RecordedStep {
  assembler: BlockAssembler
  ended: boolean
}

const isObject = (v: unknown): v is { [key: string]: unknown } =>
  v !== null && typeof v === 'object' && !Array.isArray(v)
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0

/** `loadRecording` on text already in memory; `file` is used in messages. */
export function parseRecording(text: string, file = '<recording>'): Recording {
  const steps: Building[] = []
  const models: Recording['models'] = []
  let header: { provider?: string; model?: string } = {}
  let turn = 0
  let open: Building | undefined
  let implicitStep = 0

  const lines = text.split('\n')
  lines.forEach((raw, i) => {
    const lineNo = i + 1
    const line = raw.trim()
    if (line === '') return
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch (error) {
      throw new RecordingError(file, lineNo, `malformed JSON: ${(error as Error).message}`)
    }
    if (
      !isObject(value) ||
      typeof value.type !== 'string' ||
      !isCount(value.seq) ||
      typeof value.time !== 'number' ||
      !isObject(value.data)
    ) {
      throw new RecordingError(
        file,
        lineNo,
        'not a session event: expected {"type": string, "seq": integer, "time": number, "data": object}',
      )
    }
    const event = value as unknown as RecordedEvent
    const data = event.data
    const fail = (detail: string): never => {
      throw new RecordingError(file, lineNo, `${event.type}: ${detail}`)
    }
    const openStep = (t: number, s: number): Building => {
      const step: Building = {
        turn: t,
        step: s,
        chunks: [],
        synthesized: false,
        line: lineNo,
        assembler: new BlockAssembler(),
        ended: false,
        ...header,
      }
      steps.push(step)
      open = step
      return step
    }
    const current = (): Building => (open && !open.message ? open : openStep(turn, implicitStep++))

    switch (event.type) {
      case 'turn/start':
        if (!isCount(data.turn)) fail('data.turn must be a non-negative integer')
        turn = data.turn as number
        break
      case 'request/header':
        if (typeof data.provider !== 'string' || typeof data.model !== 'string')
          fail('data.provider and data.model must be strings')
        header = { provider: data.provider as string, model: data.model as string }
        if (!models.some((m) => m.provider === header.provider && m.model === header.model)) {
          models.push({ provider: header.provider!, model: header.model! })
        }
        if (open && open.chunks.length === 0 && !open.message) Object.assign(open, header)
        break
      case 'step/start':
        if (!isCount(data.turn) || !isCount(data.step)) fail('data.turn and data.step must be non-negative integers')
        openStep(data.turn as number, data.step as number)
        implicitStep = (data.step as number) + 1
        break
      case 'assistant/chunk': {
        const chunk = data.chunk
        if (!isObject(chunk) || typeof chunk.kind !== 'string')
          fail('data.chunk must be a stream chunk object with a string kind')
        const step = current()
        try {
          step.assembler.push(chunk as unknown as StreamChunk)
        } catch (error) {
          fail(`invalid chunk in turn ${step.turn} step ${step.step}: ${(error as Error).message}`)
        }
        step.chunks.push(chunk as unknown as StreamChunk)
        break
      }
      case 'assistant/message': {
        const message = data.message
        if (!isObject(message) || message.role !== 'assistant' || !Array.isArray(message.content)) {
          fail('data.message must be an assistant message with a content array')
        }
        const step = current()
        step.message = message as unknown as AssistantMessage
        if (data.interrupted === true) step.interrupted = true
        if (step.chunks.length === 0) {
          step.chunks = synthesize(
            step.message,
            data.usage as TokenUsage | undefined,
            data.finish as FinishReason | undefined,
            data.interrupted === true,
          )
          step.synthesized = true
        }
        break
      }
      case 'step/end':
        if (open) open.ended = true
        open = undefined
        break
      case 'turn/end': {
        const error = data.error
        const last = steps.at(-1)
        if (
          isObject(error) &&
          typeof error.code === 'string' &&
          (LLM_ERROR_CODES as readonly string[]).includes(error.code) &&
          last !== undefined &&
          last.turn === data.turn &&
          !last.chunks.some((c) => c.kind === 'finish')
        ) {
          last.error = {
            code: error.code as LlmErrorCode,
            message: typeof error.message === 'string' ? error.message : error.code,
          }
        }
        open = undefined
        break
      }
    }
  })

  return {
    file,
    models,
    steps: steps.map(({ assembler: _a, ended: _e, ...step }) => step),
  }
}

/** Chunks that a BlockAssembler folds back into `message` (images have no chunk and are skipped). */
export function synthesize(
  message: AssistantMessage,
  usage?: TokenUsage,
  finish?: FinishReason,
  interrupted = false,
): StreamChunk[] {
  const chunks: StreamChunk[] = []
  let index = 0
  let calls = 0
  for (const block of message.content) {
    if (block.type === 'text') chunks.push({ kind: 'text-delta', text: block.text })
    else if (block.type === 'reasoning') {
      chunks.push(
        block.signature === undefined
          ? { kind: 'reasoning-delta', text: block.text }
          : { kind: 'reasoning-delta', text: block.text, signature: block.signature },
      )
    } else if (block.type === 'tool-call') {
      const i = index++
      calls++
      chunks.push({ kind: 'tool-call-start', index: i, callId: block.callId, name: block.name })
      if (block.arguments !== '') chunks.push({ kind: 'tool-call-delta', index: i, argumentsDelta: block.arguments })
      chunks.push({ kind: 'tool-call-end', index: i })
    }
  }
  if (usage) chunks.push({ kind: 'usage', usage: { ...usage } })
  const reason = finish ?? (interrupted ? undefined : calls ? 'tool-calls' : 'stop')
  if (reason) chunks.push({ kind: 'finish', reason })
  return chunks
}
