// Seeded generator of scripted sessions for the "every face shows exactly what happened" checks
// (issue 43): turns x steps x parallel calls, reasoning on or off, and provider call ids that are
// unique, repeated across steps (`call_0_0` every turn), empty or missing, plus a tool error. Each
// session is a list of turns, each turn a prompt and the @dsh/llm-mock-server steps that answer
// it, in request order. Every piece of text carries a marker unique in the session, so a face's
// rendering can be searched for exactly the items of the log, in order.
//
// `foldLog` turns a session log into the ordered items every face must show (prompts, reasoning
// blocks, calls, results, answers): the oracle the face checks compare against.

/** A step of @dsh/llm-mock-server's script (kept structural: this package has no runtime deps). */
export type MockStep = { [key: string]: unknown }

export type IdMode = 'unique' | 'repeated' | 'empty' | 'missing' | 'mixed'

export interface GeneratedTurn {
  prompt: string
  /** The mock steps of the turn itself, in request order (a compaction's summary step is not one). */
  steps: MockStep[]
  /**
   * A cancelled turn: its last step streams this text, then stalls until the client leaves. The
   * face cancels once it shows the text (through its own abort path: Esc, `session/cancel`).
   */
  cancelAt?: string
  /** The face runs `/compact` after this turn; `summary` is the scripted summary step. */
  compactAfter?: MockStep
}

/** The kinds a session may hold besides plain calls and answers (for coverage and messages). */
export type SessionKind = 'reasoning' | 'error' | 'cancel' | 'approval' | 'compaction' | `ids-${IdMode}`

export interface GeneratedSession {
  seed: number
  idMode: IdMode
  turns: GeneratedTurn[]
  /** The kinds this session holds (a tool error, a cancelled step, an approval, ...). */
  kinds: Set<SessionKind>
  /** Every mock step of the session in request order (compaction summaries included). */
  steps: MockStep[]
  /** One line a failure prints: the seed and the session's shape. */
  describe(): string
}

export interface GeneratorOptions {
  /** Most turns (at least 1). Default 3. */
  maxTurns?: number
  /** Most tool steps before a turn's answer. Default 2. */
  maxToolSteps?: number
  /** Most parallel calls in a tool step. Default 3. */
  maxParallel?: number
  /** Force the id mode (default: drawn from the seed). */
  idMode?: IdMode
  /**
   * Draw the interactive kinds too: a cancelled step, a call that needs approval, a compaction
   * between turns. Default true.
   */
  interactive?: boolean
}

/** mulberry32: a small, fast, seedable PRNG (uniform in [0, 1)). */
export function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const ID_MODES: IdMode[] = ['unique', 'repeated', 'empty', 'missing', 'mixed']

/**
 * The command a call runs. Shell arithmetic makes the output differ from the command text, so a
 * face showing the call and one showing its result are told apart: `echo m3x$((40+2))` prints
 * `m3x42`.
 */
export const callCommand = (marker: string): string => `echo ${marker}x$((40+2))`
export const callOutput = (marker: string): string => `${marker}x42`

/** What the mock model answers to a `/compact` summary request (no marker: faces need not show it). */
export const SUMMARY_TEXT =
  'Summary of the conversation so far: the user asked for several shell commands, which ran; the answers followed.'

/** One seeded session. The same seed and options always give the same session. */
export function generateSession(seed: number, options: GeneratorOptions = {}): GeneratedSession {
  const rand = random(seed)
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1))
  const idMode = options.idMode ?? ID_MODES[int(0, ID_MODES.length - 1)]
  const turnCount = int(1, Math.max(1, options.maxTurns ?? 3))
  const maxToolSteps = options.maxToolSteps ?? 2
  const maxParallel = Math.max(1, options.maxParallel ?? 3)
  const tag = `s${seed.toString(36)}`
  let n = 0
  const marker = (kind: string) => `${kind}${tag}n${++n}`
  const interactive = options.interactive ?? true
  const turns: GeneratedTurn[] = []
  const kinds = new Set<SessionKind>()
  let errorPlaced = false
  const drawCall = (i: number, allowError: boolean): MockStep => {
    const m = marker('m')
    const args: { [key: string]: unknown } = { command: callCommand(m), description: `run ${m}` }
    // The tool error: arguments the schema refuses (`timeoutMs` below its minimum), answered
    // by a model-visible error result; the command never runs, so no output marker.
    if (allowError && !errorPlaced && rand() < 0.25) {
      args.timeoutMs = 0
      errorPlaced = true
      kinds.add('error')
    } else if (interactive && rand() < 0.12) {
      // An approval: the call asks to leave the sandbox (the session is in workspace-write), so
      // the approval service asks the face, which allows it once.
      args.sandbox_escalation = { justification: `needs ${m}` }
      kinds.add('approval')
    }
    const call: MockStep = { name: 'bash', arguments: args }
    const mode = idMode === 'mixed' ? ID_MODES[int(0, 3)] : idMode
    // `repeated`: numbered per response from 0, as servers that restart numbering do.
    if (mode === 'repeated') call.id = `call_0_${i}`
    else if (mode === 'empty') call.id = ''
    else if (mode === 'missing') call.id = null
    kinds.add(`ids-${mode}`)
    return call
  }
  for (let t = 0; t < turnCount; t++) {
    const steps: MockStep[] = []
    const toolSteps = int(0, maxToolSteps)
    for (let s = 0; s < toolSteps; s++) {
      const step: MockStep = {}
      if (rand() < 0.5) {
        step.reasoning = `thinking ${marker('r')} over`
        kinds.add('reasoning')
      }
      const calls: MockStep[] = []
      const parallel = int(1, maxParallel)
      for (let i = 0; i < parallel; i++) calls.push(drawCall(i, true))
      step.toolCalls = calls
      steps.push(step)
    }
    const prompt = `task ${marker('u')}`
    const turn: GeneratedTurn = { prompt, steps }
    if (interactive && rand() < 0.2) {
      // The cancelled step: reasoning (maybe), a partial answer, maybe a whole tool call, then the
      // stream stalls; the face cancels once the partial answer shows. A call complete in the
      // prefix never runs: the loop answers it as cancelled.
      const events: MockStep[] = []
      if (rand() < 0.5) {
        events.push({ reasoning: `pondering ${marker('r')} still` })
        kinds.add('reasoning')
      }
      const partial = `partial ${marker('a')} so`
      events.push({ text: partial })
      if (rand() < 0.5) {
        const call = drawCall(0, false)
        events.push({
          toolCall: { ...(call.id !== undefined ? { id: call.id } : {}), name: 'bash', arguments: call.arguments },
        })
      }
      events.push({ stall: true })
      steps.push({ events })
      turn.cancelAt = partial
      kinds.add('cancel')
    } else {
      const answer: MockStep = { text: `answer ${marker('a')} done` }
      if (rand() < 0.5) {
        answer.reasoning = `finally ${marker('r')} decided`
        kinds.add('reasoning')
      }
      steps.push(answer)
    }
    if (interactive && rand() < 0.25) {
      turn.compactAfter = { text: SUMMARY_TEXT }
      kinds.add('compaction')
    }
    turns.push(turn)
  }
  const session: GeneratedSession = {
    seed,
    idMode,
    turns,
    kinds,
    steps: turns.flatMap((t) => (t.compactAfter ? [...t.steps, t.compactAfter] : t.steps)),
    describe() {
      const shape = turns
        .map((t) => t.steps.map((s) => stepShape(s)).join('.') + (t.compactAfter ? ' | /compact' : ''))
        .join(' | ')
      return `seed ${seed} (ids ${idMode}; turns: ${shape})`
    },
  }
  return session
}

/**
 * One step's shape: `r` reasoning, a digit the calls of a tool step (`p` after it for each call
 * that asks approval, `e` for the tool error), `A` an answer, `X` a cancelled step (`Xc` with a
 * call in its prefix).
 */
function stepShape(step: MockStep): string {
  if (Array.isArray(step.events)) {
    const events = step.events as MockStep[]
    return `${events.some((e) => e.reasoning) ? 'r' : ''}X${events.some((e) => e.toolCall) ? 'c' : ''}`
  }
  const r = step.reasoning ? 'r' : ''
  if (!Array.isArray(step.toolCalls)) return `${r}A`
  const calls = step.toolCalls as Array<{ arguments: { [key: string]: unknown } }>
  const flags = calls
    .map((c) => (c.arguments.sandbox_escalation ? 'p' : c.arguments.timeoutMs === 0 ? 'e' : ''))
    .join('')
  return `${r}${calls.length}${flags}`
}

/**
 * The cases a session exercises: its kinds, plus where they sit, which the faces once got wrong in
 * ways the kinds alone do not tell: a cancelled first turn, a cancelled step with a call in its
 * prefix, a compaction followed by another turn and one at the end, approvals in two consecutive
 * steps of a turn, parallel calls in one step.
 */
export type CaseKind =
  | SessionKind
  | 'cancel-first-turn'
  | 'cancel-with-call'
  | 'compaction-mid'
  | 'compaction-end'
  | 'approval-consecutive'
  | 'parallel'

/** Every case a CI seed set must cover (the interactive generator's full range). */
export const ALL_CASE_KINDS: readonly CaseKind[] = [
  'reasoning',
  'error',
  'cancel',
  'approval',
  'compaction',
  'ids-unique',
  'ids-repeated',
  'ids-empty',
  'ids-missing',
  'cancel-first-turn',
  'cancel-with-call',
  'compaction-mid',
  'compaction-end',
  'approval-consecutive',
  'parallel',
]

export function caseKinds(session: GeneratedSession): Set<CaseKind> {
  const found = new Set<CaseKind>(session.kinds)
  const escalates = (step: MockStep) =>
    Array.isArray(step.toolCalls) &&
    (step.toolCalls as Array<{ arguments: { [key: string]: unknown } }>).some((c) => c.arguments.sandbox_escalation)
  if (session.turns[0]?.cancelAt !== undefined) found.add('cancel-first-turn')
  session.turns.forEach((turn, t) => {
    if (turn.compactAfter) found.add(t < session.turns.length - 1 ? 'compaction-mid' : 'compaction-end')
    turn.steps.forEach((step, s) => {
      if (s > 0 && escalates(step) && escalates(turn.steps[s - 1])) found.add('approval-consecutive')
      if (Array.isArray(step.toolCalls) && step.toolCalls.length > 1) found.add('parallel')
      if (Array.isArray(step.events) && (step.events as MockStep[]).some((e) => e.toolCall))
        found.add('cancel-with-call')
    })
  })
  return found
}

/** Seeds for a run: `DSH_GEN_SEEDS=N` (or `--seeds N` through the script) widens the fixed set. */
export function seedsFromEnv(
  fixed: readonly number[],
  env: { [key: string]: string | undefined } = process.env,
): number[] {
  const raw = env.DSH_GEN_SEEDS
  if (raw === undefined || raw === '') return [...fixed]
  const count = Number(raw)
  if (!Number.isInteger(count) || count < 1) throw new Error(`DSH_GEN_SEEDS must be a positive integer, got '${raw}'`)
  const first = Number(env.DSH_GEN_FIRST_SEED ?? 1000)
  if (!Number.isInteger(first))
    throw new Error(`DSH_GEN_FIRST_SEED must be an integer, got '${env.DSH_GEN_FIRST_SEED}'`)
  return Array.from({ length: count }, (_, i) => first + i)
}

// ---- the oracle ----

/** One thing a face must show, in log order. */
export type LogItem =
  | { kind: 'user'; text: string }
  | { kind: 'reasoning'; text: string }
  | { kind: 'call'; callId: string; name: string; arguments: string; command?: string }
  | { kind: 'result'; callId: string; text: string; error: boolean }
  | { kind: 'answer'; text: string }

/** The subset of a session event this fold reads. */
export interface LogEvent {
  type: string
  data: any // eslint-disable-line @typescript-eslint/no-explicit-any -- session payloads of many types, read defensively
}

/**
 * The items of a log, in order: human prompts, each reasoning block and text block of the
 * assistant's messages, each `tool/call` and each `tool/result`.
 */
export function foldLog(events: readonly LogEvent[]): LogItem[] {
  const items: LogItem[] = []
  for (const event of events) {
    const data = event.data
    switch (event.type) {
      case 'user/message':
        if (data.source?.kind === 'human') items.push({ kind: 'user', text: textOf(data.content) })
        break
      case 'assistant/message':
        for (const block of data.message.content) {
          if (block.type === 'reasoning' && block.text) items.push({ kind: 'reasoning', text: block.text })
          else if (block.type === 'text' && block.text) items.push({ kind: 'answer', text: block.text })
        }
        break
      case 'tool/call': {
        let command: string | undefined
        try {
          const args = JSON.parse(data.arguments)
          if (typeof args?.command === 'string') command = args.command
        } catch {
          // Malformed on purpose (the tool error): no command.
        }
        items.push({
          kind: 'call',
          callId: data.callId,
          name: data.name,
          arguments: data.arguments,
          ...(command ? { command } : {}),
        })
        break
      }
      case 'tool/result':
        items.push({
          kind: 'result',
          callId: data.message.callId,
          text: textOf(data.message.content),
          error: data.message.isError === true || data.error !== undefined,
        })
        break
    }
  }
  return items
}

const textOf = (content: unknown): string =>
  Array.isArray(content)
    ? content.map((b: { type?: string; text?: string }) => (b.type === 'text' ? (b.text ?? '') : '')).join('')
    : ''

/** Markers (`m…`, `r…`, `a…`, `u…` plus the seed tag) in a text, in order. */
export function markersIn(text: string, tag: string): string[] {
  return [...text.matchAll(new RegExp(`\\b[mrau]${tag}n\\d+(x42)?`, 'g'))].map((m) => m[0])
}

/**
 * The marker sequence a face must show for a log: a prompt's, a reasoning block's and an answer's
 * marker; a call's marker (`m…`) and its result's (`m…x42`, absent for an error result).
 * `reasoningAs`: faces that show a reasoning row without its text use a fixed token instead.
 * `resultsInCards`: faces that draw a result inside its call's card list it right after the call
 * (the log, and ACP, list a step's calls first, then their results). `unparsedCallAs`: faces that
 * show a call whose arguments are not JSON without those arguments (ACP's `rawInput` is parsed).
 */
export function expectedMarkers(
  items: readonly LogItem[],
  tag: string,
  options: {
    reasoningAs?: string
    skip?: ReadonlyArray<LogItem['kind']>
    resultsInCards?: boolean
    unparsedCallAs?: string
  } = {},
): string[] {
  const segments: string[][] = []
  const cards = new Map<string, string[]>()
  for (const item of items) {
    if (options.skip?.includes(item.kind)) continue
    if (item.kind === 'reasoning' && options.reasoningAs) {
      segments.push([options.reasoningAs])
      continue
    }
    const text = item.kind === 'call' ? (item.command ?? item.arguments) : item.text
    const found = markersIn(text, tag)
    if (item.kind === 'call') {
      const segment =
        item.command === undefined && options.unparsedCallAs
          ? [options.unparsedCallAs]
          : found.filter((m) => !m.endsWith('x42')).slice(0, 1)
      segments.push(segment)
      cards.set(item.callId, segment)
    } else if (item.kind === 'result') {
      const marker = item.error ? [] : found.slice(0, 1)
      const card = options.resultsInCards ? cards.get(item.callId) : undefined
      if (card) card.push(...marker)
      else segments.push(marker)
    } else segments.push(found.slice(0, 1))
  }
  return segments.flat()
}

export const sessionTag = (seed: number): string => `s${seed.toString(36)}`
