// @file mentions on the real agent loop: the file's content follows the human message as a
// logged context message and reaches the request; missing, outside, directory, binary and
// oversized files get a one-line reason; the file list respects .gitignore and ranks fuzzily.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import LocalSubprocessService from '@dsh/subprocess-local'
import FileReference, { listFiles, mentionedPaths, rank } from '../src/index.ts'

let dir: string
let harness: Harness | undefined
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-file-ref-'))
  mkdirSync(join(dir, 'src'))
  writeFileSync(join(dir, 'src', 'main.ts'), 'export const answer = 42\n')
  writeFileSync(join(dir, 'notes.md'), 'alpha\n')
  writeFileSync(join(dir, 'blob.bin'), Buffer.from([1, 2, 0, 3]))
  writeFileSync(join(dir, 'big.txt'), 'x'.repeat(300))
})
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  rmSync(dir, { recursive: true, force: true })
})

/** The real subprocess seam ripgrep starts through. */
async function subprocess() {
  const ctx = new Context()
  await ctx.plugin(LocalSubprocessService, {} as never)
  return ctx.subprocess
}

const userMessages = (h: Harness) =>
  h.session.events
    .filter((e) => e.type === 'user/message')
    .map((e) => e.data as { content: Array<{ type: string; text: string }>; source: { kind: string; label?: string } })
const lastRequestText = (h: Harness) => JSON.stringify(h.model.requests.at(-1)!.messages)

describe('file-reference', () => {
  it('a mentioned file reaches the request as a logged context message after the human one', async () => {
    harness = await createHarness({ cwd: dir, script: [{ text: 'ok' }], plugins: [[FileReference, {}]] })
    await harness.prompt('what does @src/main.ts export?')
    const messages = userMessages(harness)
    expect(messages.map((m) => m.source.kind)).toEqual(['human', 'plugin'])
    expect(messages[1].source).toEqual({ kind: 'plugin', plugin: '@dsh/file-reference', label: '@src/main.ts' })
    expect(messages[1].content[0].text).toBe('<file path="src/main.ts">\nexport const answer = 42\n</file>')
    expect(lastRequestText(harness)).toContain('export const answer = 42')
  })

  it('bad mentions get a reason, not content; trailing punctuation and duplicates are handled', async () => {
    symlinkSync('/etc/hostname', join(dir, 'escape'))
    harness = await createHarness({ cwd: dir, script: [{ text: 'ok' }], plugins: [[FileReference, { maxBytes: 100 }]] })
    writeFileSync(join(dir, '..', 'secret-of-file-ref'), 'x\n')
    try {
      await harness.prompt(
        'see @gone.ts, @../secret-of-file-ref @src @blob.bin @escape @big.txt and @notes.md. Again @notes.md',
      )
    } finally {
      rmSync(join(dir, '..', 'secret-of-file-ref'), { force: true })
    }
    const texts = userMessages(harness)
      .slice(1)
      .map((m) => m.content[0].text)
    // Typed text: `@gone.ts` names nothing, so it stays text (no note); the rest name something.
    expect(texts).toHaveLength(6)
    expect(texts[0]).toMatch(/unavailable="outside">.*outside the session directory/)
    expect(texts[1]).toMatch(/^<file path="src" unavailable="not-a-file">/)
    expect(texts[2]).toMatch(/unavailable="binary">.*\(4 bytes\)/)
    expect(texts[3]).toMatch(/^<file path="escape" unavailable="outside">/)
    expect(texts[4]).toContain('[… 200 more bytes not included; read the file for the rest]')
    expect(texts[5]).toBe('<file path="notes.md">\nalpha\n</file>')
  })

  it('typed @words that name no file stay text: no note reaches the log or the request', async () => {
    harness = await createHarness({ cwd: dir, script: [{ text: 'ok' }], plugins: [[FileReference, {}]] })
    await harness.prompt('@nothing here, ask @alice; but @notes.md is real')
    const messages = userMessages(harness)
    expect(messages.map((m) => m.source)).toEqual([
      { kind: 'human' },
      { kind: 'plugin', plugin: '@dsh/file-reference', label: '@notes.md' },
    ])
    expect(lastRequestText(harness)).not.toContain('no such file')
  })

  it('a message whose client marks picked references expands exactly those, missing ones with a reason', async () => {
    harness = await createHarness({ cwd: dir, script: [{ text: 'ok' }], plugins: [[FileReference, {}]] })
    const references = [
      { kind: 'file' as const, path: 'gone.ts' },
      { kind: 'file' as const, path: 'notes.md' },
      { kind: 'session' as const, sessionId: 'other' },
    ]
    // `@src/main.ts` was typed, not picked: it stays text.
    await harness.agent.send('compare @src/main.ts with @notes.md and @gone.ts', {
      source: { kind: 'human', references },
    })
    const messages = userMessages(harness)
    expect(messages[0].source).toEqual({ kind: 'human', references })
    expect(messages.slice(1).map((m) => m.content[0].text)).toEqual([
      '<file path="gone.ts" unavailable="missing">The user mentioned @gone.ts, but no such file exists (it may have been deleted or renamed).</file>',
      '<file path="notes.md">\nalpha\n</file>',
    ])
    expect(lastRequestText(harness)).not.toContain('export const answer')
  })

  it('a message without mentions, e-mail addresses and session references add nothing', async () => {
    harness = await createHarness({ cwd: dir, script: [{ text: 'ok' }], plugins: [[FileReference, {}]] })
    await harness.prompt('mail me@example.com about @session:abc')
    expect(userMessages(harness)).toHaveLength(1)
    expect(mentionedPaths('@a @a @b https://x/@c')).toEqual(['a', 'b'])
  })

  it('the file list respects .gitignore (no git repository needed) and hidden files; ranking is fuzzy', async () => {
    writeFileSync(join(dir, '.gitignore'), 'ignored/\n*.log\n')
    mkdirSync(join(dir, 'ignored'))
    writeFileSync(join(dir, 'ignored', 'x.ts'), '')
    writeFileSync(join(dir, 'debug.log'), '')
    writeFileSync(join(dir, '.hidden'), '')
    const { files, truncated } = await listFiles(await subprocess(), dir, 1000)
    expect(files.sort()).toEqual(['big.txt', 'blob.bin', 'notes.md', 'src/main.ts'])
    expect(truncated).toBe(false)
    expect((await listFiles(await subprocess(), dir, 2)).truncated).toBe(true)
    expect(rank(files, 'main', 5)[0]).toBe('src/main.ts')
    expect(rank(files, 'smts', 5)).toEqual(['src/main.ts'])
    expect(rank(files, 'zzz', 5)).toEqual([])
    expect(rank(files, '', 2)).toEqual(['big.txt', 'blob.bin'])
  })
})
