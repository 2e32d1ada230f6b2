// A keyless test of the tool recipe on a real agent loop (@dsh/agent-loop-testkit): the scripted
// model calls the tool, and the next request carries the tool's result.
import { afterEach, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import * as wordCount from '../index.ts'

let harness: Harness | undefined
afterEach(async () => harness?.dispose())

const toolNames = (h: Harness, i: number) => (h.model.requests[i].tools ?? []).map((t) => t.name)
const lastMessage = (h: Harness, i: number) => JSON.stringify(h.model.requests[i].messages.at(-1))

it('the model is offered word_count, calls it and reads the count', async () => {
  harness = await createHarness({
    plugins: [[wordCount, {}]],
    script: [{ toolCalls: [{ name: 'word_count', arguments: { text: 'one two  three' } }] }, { text: 'three words' }],
  })
  const result = await harness.prompt('how many words?')
  expect(result).toMatchObject({ reason: 'completed', text: 'three words' })
  expect(toolNames(harness, 0)).toContain('word_count')
  expect(lastMessage(harness, 1)).toContain('3 words')
})

it('a text over maxChars is a model-visible error, not a crash', async () => {
  harness = await createHarness({
    plugins: [[wordCount, { maxChars: 5 }]],
    script: [{ toolCalls: [{ name: 'word_count', arguments: { text: 'far too long' } }] }, { text: 'ok' }],
  })
  await harness.prompt('count')
  expect(lastMessage(harness, 1)).toContain('the limit is 5')
})

it('unloading the plugin removes the tool from the next request', async () => {
  harness = await createHarness({ script: [{ text: 'a' }, { text: 'b' }] })
  const mounted = await harness.mount(wordCount, {})
  await harness.prompt('first')
  await mounted.dispose()
  await harness.prompt('second')
  expect(toolNames(harness, 0)).toContain('word_count')
  expect(toolNames(harness, 1)).not.toContain('word_count')
})
