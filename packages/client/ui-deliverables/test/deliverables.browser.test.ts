// Files a turn produced: the fold over a log, and in real Chromium against `dsh web` a turn that
// writes and edits a file lists it with its line counts and shows the diff; a failed edit is not
// listed.
import { describe, expect, it, vi } from 'vitest'
import { hasChromium, useWebApp, withArtifacts } from '@dsh/web-testkit'
import { diffLines, lastTurnDeliverables } from '../src/deliverables.ts'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

describe('lastTurnDeliverables', () => {
  it('groups successful changes of the last turn by path; failed and other calls are left out', () => {
    const call = (seq: number, callId: string, name: string, args: unknown) => ({
      seq,
      type: 'tool/call',
      data: { callId, name, arguments: JSON.stringify(args) },
    })
    const result = (seq: number, callId: string, isError = false) => ({
      seq,
      type: 'tool/result',
      data: { message: { role: 'tool', callId, name: 'x', content: [], ...(isError ? { isError } : {}) } },
    })
    const events = [
      { seq: 0, type: 'turn/start', data: { turn: 1 } },
      call(1, 'a', 'write', { file_path: 'old.txt', content: 'x' }),
      result(2, 'a'),
      { seq: 3, type: 'turn/start', data: { turn: 2 } },
      call(4, 'b', 'write', { file_path: 'n.txt', content: 'one\ntwo' }),
      result(5, 'b'),
      call(6, 'c', 'edit', { file_path: 'n.txt', old_string: 'two', new_string: 'TWO\nthree' }),
      result(7, 'c'),
      call(8, 'd', 'edit', { file_path: 'bad.txt', old_string: 'x', new_string: 'y' }),
      result(9, 'd', true),
      call(10, 'e', 'bash', { command: 'ls' }),
      result(11, 'e'),
      call(12, 'f', 'str_replace_editor', { command: 'create', path: 'c.md', file_text: '# c' }),
      result(13, 'f'),
      { seq: 14, type: 'tool/call', data: { callId: 'g', name: 'write', arguments: '{broken' } },
    ]
    const { turn, files } = lastTurnDeliverables(events)
    expect(turn).toBe(2)
    expect(files.map((f) => [f.path, f.added, f.removed, f.changes.length])).toEqual([
      ['n.txt', 4, 1, 2],
      ['c.md', 1, 0, 1],
    ])
    expect(diffLines(files[0].changes[1])).toEqual(['-two', '+TWO', '+three'])
    expect(lastTurnDeliverables([]).files).toEqual([])
    expect(diffLines({ seq: 0, tool: 'write', kind: 'create', after: 'a\nb\n' })).toEqual(['+a', '+b'])
  })
})

describe.skipIf(!hasChromium())('ui-deliverables in the browser', () => {
  // The worker's shared host, with this file's script and a folder of its own.
  const app = useWebApp({
    steps: [
      { toolCalls: [{ name: 'write', arguments: { file_path: 'notes.txt', content: 'alpha\nbeta\n' } }] },
      {
        toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'BETA' } }],
      },
      {
        toolCalls: [
          { name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'no such text', new_string: 'x' } },
        ],
      },
      { text: 'Wrote the notes.' },
    ] as never,
  })

  it('the files of the turn with counts, and the diff of each', async () => {
    const { page, errors } = await app.openPage()
    await withArtifacts(page, 'deliverables', async () => {
      await page.locator('textarea.dsh-composer-input').fill('write notes')
      await page.locator('textarea.dsh-composer-input').press('Enter')
      await page.locator('[data-node="assistant"]', { hasText: 'Wrote the notes.' }).waitFor()
      const row = page.locator('[data-deliverable="notes.txt"]')
      await row.waitFor()
      expect(await page.locator('[data-deliverable]').count()).toBe(1)
      expect(await row.locator('.add').first().textContent()).toBe('+3')
      expect(await row.locator('.del').first().textContent()).toBe('−1')
      await row.locator('button').click()
      const diff = await page.locator('[data-deliverable-diff="notes.txt"]').innerText()
      expect(diff).toContain('+alpha')
      expect(diff).toContain('-beta')
      expect(diff).toContain('+BETA')
      expect(diff).not.toContain('no such text')
      expect(errors).toEqual([])
    })
  })
})
