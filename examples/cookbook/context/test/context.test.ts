// The request-context recipe on a real agent loop: the notes reach the first request of a turn,
// are logged as a plugin message, and are not repeated while the file is unchanged.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import * as notes from '../index.ts'

let harness: Harness | undefined
afterEach(async () => harness?.dispose())

const requestText = (h: Harness, i: number) => JSON.stringify(h.model.requests[i].messages)

it('enters NOTES.md before the first request, logs it, and repeats it only after a change', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'cookbook-notes-'))
  writeFileSync(join(cwd, 'NOTES.md'), 'Use tabs.')
  harness = await createHarness({ cwd, plugins: [[notes, {}]], script: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] })

  await harness.prompt('first')
  expect(requestText(harness, 0)).toContain('Use tabs.')
  const logged = harness.session.events.filter(
    (e) => e.type === 'user/message' && (e.data as { source: { kind: string } }).source.kind === 'plugin',
  )
  expect(logged).toHaveLength(1)

  await harness.prompt('second')
  expect(requestText(harness, 1).split('Use tabs.').length).toBe(2) // still once in the history

  writeFileSync(join(cwd, 'NOTES.md'), 'Use spaces.')
  await harness.prompt('third')
  expect(requestText(harness, 2)).toContain('Use spaces.')
})

it('adds nothing without a notes file', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'cookbook-notes-'))
  harness = await createHarness({ cwd, plugins: [[notes, {}]], script: [{ text: 'a' }] })
  await harness.prompt('hi')
  expect(requestText(harness, 0)).not.toContain('project-notes')
})
