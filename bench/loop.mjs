#!/usr/bin/env node
// Harness overhead per step of the real agent loop, and its growth with log length.
// A 1,000-step scripted session (each step one trivial tool call, then a final answer) runs
// through the real plugin tree. Model time (time spent inside the scripted adapter's iterator)
// is subtracted, so what remains is the harness: logging, derivation, prompt assembly, tools.
// Prints per-step overhead over steps 1-100 and 901-1000, and their ratio (growth).
import { register } from 'tsx/esm/api'
import { performance } from 'node:perf_hooks'

register()
const { createHarness } = await import('../packages/test-support/agent-loop-testkit/src/index.ts')

const STEPS = Number(process.env.BENCH_STEPS ?? 1000)
const script = []
for (let i = 0; i < STEPS; i++) script.push({ toolCalls: [{ name: 'noop', arguments: { value: String(i) } }] })
script.push({ text: 'finished' })

const harness = await createHarness({ script, maxSteps: STEPS + 1 })
const model = harness.model
// Time spent inside the adapter's own iterator counts as model time.
let modelMs = 0
const original = model.stream.bind(model)
model.stream = (request) => {
  const inner = original(request)[Symbol.asyncIterator]()
  return {
    [Symbol.asyncIterator]() {
      return this
    },
    async next() {
      const t0 = performance.now()
      try {
        return await inner.next()
      } finally {
        modelMs += performance.now() - t0
      }
    },
    async return(value) {
      return inner.return ? inner.return(value) : { done: true, value }
    },
  }
}
await harness.mount({
  name: 'noop-tool',
  inject: ['tools'],
  apply(ctx) {
    ctx.tools.register({
      name: 'noop',
      description: 'does nothing',
      parameters: { type: 'object', properties: { value: { type: 'string' } } },
      concurrencySafe: true,
      execute: (args) => ({ content: `ok ${args.value}` }),
    })
  },
})

// Per-step wall time and model time, sampled at each step/start.
const marks = [] // [wall, model]
harness.session.subscribe((event) => {
  if (event.type === 'step/start') marks.push([performance.now(), modelMs])
})
const t0 = performance.now()
const result = await harness.prompt('run the benchmark')
const total = performance.now() - t0
marks.push([performance.now(), modelMs])
if (result.reason !== 'completed') {
  console.error(`bench/loop: the turn ended with ${result.reason}`, result.error)
  process.exit(1)
}
const overhead = (from, to) => {
  const [w0, m0] = marks[from]
  const [w1, m1] = marks[to]
  return (w1 - w0 - (m1 - m0)) / (to - from)
}
const early = overhead(1, Math.min(100, STEPS))
const late = overhead(Math.max(STEPS - 99, 1), STEPS)
const events = harness.session.length
console.log(
  `steps: ${STEPS + 1}, events in log: ${events}, total: ${total.toFixed(0)} ms, model time: ${modelMs.toFixed(0)} ms`,
)
console.log(`harness overhead per step, steps 1-100:    ${early.toFixed(3)} ms`)
console.log(`harness overhead per step, steps ${STEPS - 99}-${STEPS}: ${late.toFixed(3)} ms`)
console.log(`growth (late / early): ${(late / early).toFixed(2)}x   (target: < 1 ms per step, no growth)`)
await harness.dispose()
