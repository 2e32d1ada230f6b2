#!/usr/bin/env node
// A long scripted session through the real plugin tree with compaction: BENCH_STEPS (default
// 2,000) steps, each one `read` call whose result is BENCH_RESULT_BYTES (default 5,000) characters,
// against the scripted model's 128k-token window. Runs two compositions in the same process
// order: compaction-basic alone, then compaction-basic with the tool-result pruner.
// Reports peak RSS, harness overhead per step over the first and last 100 steps (model time
// subtracted), the number of compactions and pruned results, the prompt tokens sent (agent and
// summary requests) against the sum an uncompacted session would have sent, and the share of
// prompt tokens that repeat the previous request's prefix (what a provider's prompt cache can hit).
// Tokens are estimated at four characters each, as the token meter does.
import { register } from 'tsx/esm/api'
import { performance } from 'node:perf_hooks'

register()
const { createHarness } = await import('../packages/test-support/agent-loop-testkit/src/index.ts')
const { default: TokenMeter } = await import('../packages/session/token-meter/src/index.ts')
const { default: BasicCompactionEngine } = await import('../packages/compaction/compaction-basic/src/index.ts')
const { default: ToolResultPruner } = await import('../packages/compaction/compaction-tool-result-pruner/src/index.ts')

const STEPS = Number(process.env.BENCH_STEPS ?? 2000)
const RESULT = Number(process.env.BENCH_RESULT_BYTES ?? 5000)
const tokens = (chars) => Math.ceil(chars / 4)
const messageChars = new WeakMap()
const charsOf = (m) => {
  let n = messageChars.get(m)
  if (n === undefined) messageChars.set(m, (n = JSON.stringify(m).length))
  return n
}

async function run(label, withPruner) {
  let modelMs = 0
  let agentSteps = 0
  let uncompactedChars = 0 // every message-producing event ever appended (the uncompacted history)
  let sentTokens = 0
  let uncompactedTokens = 0
  let reusedTokens = 0
  let previous
  const summaryText = 'Summary: the user asked to read every source file in order. '.repeat(25)
  const entry = (request) => {
    const t0 = performance.now()
    const headerChars = (request.system ?? '').length + JSON.stringify(request.tools ?? []).length
    let chars = headerChars
    for (const m of request.messages) chars += charsOf(m)
    sentTokens += tokens(chars)
    // Prefix shared with the previous request (log messages are shared objects, so identity works).
    if (previous && previous.system === request.system) {
      let shared = headerChars
      for (let i = 0; i < request.messages.length && previous.messages[i] === request.messages[i]; i++)
        shared += charsOf(request.messages[i])
      reusedTokens += tokens(shared)
    }
    previous = request
    const usage = { input: tokens(chars), output: 30 }
    let step
    if (request.metadata?.purpose === 'compaction') step = { usage, text: summaryText }
    else {
      uncompactedTokens += tokens(headerChars + uncompactedChars)
      const n = agentSteps++
      step =
        n < STEPS
          ? { usage, toolCalls: [{ name: 'read', arguments: { path: `src/module${n}.ts` } }] }
          : { usage, text: 'finished' }
    }
    modelMs += performance.now() - t0
    return step
  }
  const plugins = [[TokenMeter], [BasicCompactionEngine, {}]]
  if (withPruner) plugins.push([ToolResultPruner, {}])
  const harness = await createHarness({
    script: Array.from({ length: STEPS * 2 }, () => entry),
    maxSteps: STEPS + 10,
    plugins,
  })
  await harness.mount({
    name: 'read-tool',
    inject: ['tools'],
    apply(ctx) {
      ctx.tools.register({
        name: 'read',
        description: 'reads a file',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        concurrencySafe: true,
        execute: (args) => {
          let text = ''
          for (let line = 0; text.length < RESULT; line++)
            text += `${args.path}:${line}: export const v${line} = ${line * 7} // value\n`
          return { content: text.slice(0, RESULT) }
        },
      })
    },
  })
  const marks = []
  harness.session.subscribe((event) => {
    if (event.type === 'step/start') marks.push([performance.now(), modelMs])
    if (event.type === 'user/message' || event.type === 'assistant/message' || event.type === 'tool/result') {
      uncompactedChars += JSON.stringify(
        event.type === 'user/message' ? { role: 'user', content: event.data.content } : event.data.message,
      ).length
    }
  })
  const t0 = performance.now()
  const result = await harness.prompt('read every module in order')
  const total = performance.now() - t0
  marks.push([performance.now(), modelMs])
  if (result.reason !== 'completed') {
    console.error(`bench/long-session (${label}): the turn ended with ${result.reason}`, result.error)
    process.exit(1)
  }
  const overhead = (from, to) => {
    const [w0, m0] = marks[from]
    const [w1, m1] = marks[to]
    return (w1 - w0 - (m1 - m0)) / (to - from)
  }
  const events = harness.session.events
  const compactions = events.filter((e) => e.type === 'compaction/end' && e.data.status === 'compacted').length
  const pruned = events.filter(
    (e) => e.type === 'surface/replace' && e.data.meta?.by === '@dsh/compaction-tool-result-pruner',
  ).length
  const early = overhead(1, Math.min(100, STEPS))
  const late = overhead(Math.max(STEPS - 99, 1), STEPS)
  console.log(`\n== ${label}`)
  console.log(
    `steps: ${STEPS + 1}, events in log: ${events.length}, wall: ${total.toFixed(0)} ms (model script ${modelMs.toFixed(0)} ms)`,
  )
  console.log(
    `harness overhead per step, steps 1-100: ${early.toFixed(3)} ms; steps ${STEPS - 99}-${STEPS}: ${late.toFixed(3)} ms (late/early ${(late / early).toFixed(2)}x)`,
  )
  console.log(`compactions: ${compactions}, pruned tool results: ${pruned}`)
  console.log(
    `prompt tokens sent: ${sentTokens.toLocaleString('en')} vs uncompacted ${uncompactedTokens.toLocaleString('en')} (${((100 * sentTokens) / uncompactedTokens).toFixed(1)}%)`,
  )
  console.log(
    `prompt tokens repeating the previous request's prefix (cacheable): ${((100 * reusedTokens) / sentTokens).toFixed(1)}%`,
  )
  console.log(
    `last request: ~${tokens((previous.system ?? '').length + JSON.stringify(previous.messages).length)} tokens of a 128,000 window`,
  )
  await harness.dispose()
}

await run('compaction-basic', false)
await run('compaction-basic + tool-result-pruner', true)
console.log(`\npeak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`)
