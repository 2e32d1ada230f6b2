// `@` file mentions over the real ripgrep binary in a temporary tree.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CombinedAutocompleteProvider } from '@mariozechner/pi-tui'
import { Context } from 'cordis'
import LocalSubprocessService from '@dsh/subprocess-local'
import { MentionProvider, listFiles, mentionQuery, rankFiles } from '../src/mentions.ts'

function tree(): string {
  const root = mkdtempSync(join(tmpdir(), 'dsh-tui-mention-'))
  mkdirSync(join(root, 'src', 'deep'), { recursive: true })
  mkdirSync(join(root, 'build'))
  writeFileSync(join(root, '.gitignore'), 'build/\n')
  writeFileSync(join(root, 'README.md'), '')
  writeFileSync(join(root, 'src', 'app.ts'), '')
  writeFileSync(join(root, 'src', 'deep', 'application.ts'), '')
  writeFileSync(join(root, 'build', 'app.js'), '')
  // rg honours .gitignore only inside a git checkout or with an .ignore file.
  writeFileSync(join(root, '.ignore'), 'build/\n')
  return root
}

/** The real subprocess seam ripgrep starts through. */
async function subprocess() {
  const ctx = new Context()
  await ctx.plugin(LocalSubprocessService, {} as never)
  return ctx.subprocess
}

describe('@ mentions', () => {
  it('finds the query at the end of the text only after a space or at the start', () => {
    expect(mentionQuery('@')).toBe('')
    expect(mentionQuery('look at @src/a')).toBe('src/a')
    expect(mentionQuery('mail me@example.com')).toBeUndefined()
    expect(mentionQuery('@src/app.ts and more')).toBeUndefined()
  })

  it('lists files with ripgrep (ignore files honoured) and ranks substring matches shortest first', async () => {
    const root = tree()
    const files = await listFiles(await subprocess(), root)
    expect(files.sort()).toEqual(['README.md', 'src/app.ts', 'src/deep/application.ts'])
    expect(rankFiles(files, 'APP')).toEqual(['src/app.ts', 'src/deep/application.ts'])
    expect(await listFiles(await subprocess(), join(root, 'missing'))).toEqual([])
  })

  it('suggests @paths and completes them with a trailing space; slash commands still reach the wrapped provider', async () => {
    const root = tree()
    const provider = new MentionProvider(
      new CombinedAutocompleteProvider([{ name: 'help', description: 'List commands' }], root, null),
      root,
      await subprocess(),
    )
    const signal = new AbortController().signal
    const got = await provider.getSuggestions(['see @deep'], 0, 9, { signal })
    expect(got).toEqual({
      items: [{ value: '@src/deep/application.ts', label: 'src/deep/application.ts' }],
      prefix: '@deep',
    })
    expect(provider.applyCompletion(['see @deep now'], 0, 9, got!.items[0], got!.prefix)).toEqual({
      lines: ['see @src/deep/application.ts  now'],
      cursorLine: 0,
      cursorCol: 29,
    })
    // A menu computed for an earlier keystroke ('@dee') picked after another ('@deep'): the whole
    // token before the cursor is replaced, not as many characters as the stale prefix had.
    expect(provider.applyCompletion(['see @deep'], 0, 9, got!.items[0], '@dee')).toEqual({
      lines: ['see @src/deep/application.ts '],
      cursorLine: 0,
      cursorCol: 29,
    })
    const slash = await provider.getSuggestions(['/he'], 0, 3, { signal })
    expect(slash?.items.map((i) => i.value)).toEqual(['help'])
    expect(await provider.getSuggestions(['@zzz'], 0, 4, { signal })).toBeNull()
  })
})
