import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import LocalFileSystem from '@dsh/fs-local'
import * as Policy from '@dsh/fs-observation-policy'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { ToolResultPayload } from '@dsh/tools'
import * as ToolFs from '../src/index.ts'

let dir: string
let harness: Harness
let seq = 0

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-tool-fs-'))
  harness = await createHarness({
    cwd: dir,
    plugins: [
      [LocalFileSystem, {}],
      [Policy, {}],
      [ToolFs, {}],
    ],
  })
})
afterAll(async () => {
  await harness.dispose()
  rmSync(dir, { recursive: true, force: true })
})

function call(name: string, args: object, session = 'S1'): Promise<ToolResultPayload> {
  return harness.ctx.tools.execute(
    { callId: `c${++seq}`, name, arguments: JSON.stringify(args) },
    { cwd: dir, sessionId: session },
  )
}
const text = (result: ToolResultPayload) =>
  result.message.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n')

describe('read', () => {
  it('returns a line-numbered window and states how to continue', async () => {
    writeFileSync(join(dir, 'long.txt'), Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n')
    const all = await call('read', { file_path: 'long.txt' })
    expect(all.error).toBeUndefined()
    expect(text(all).split('\n')[0]).toBe('     1\tline 1')
    expect(text(all)).toContain('    30\tline 30')
    expect(text(all)).not.toContain('Showing')
    const window = await call('read', { file_path: 'long.txt', offset: 10, limit: 5 })
    expect(text(window)).toBe(
      ['    10\tline 10', '    11\tline 11', '    12\tline 12', '    13\tline 13', '    14\tline 14'].join('\n') +
        '\n\n(Showing lines 10-14 of 30. Call read with offset=15 to continue.)',
    )
    expect(window.meta).toMatchObject({ totalLines: 30, firstLine: 10, lastLine: 14 })
    const past = await call('read', { file_path: 'long.txt', offset: 31 })
    expect(past.error?.code).toBe('OFFSET_OUT_OF_RANGE')
    expect(text(past)).toContain('has 30 lines')
  })

  it('uses a default limit of 2000 lines and cuts long lines with a marker', async () => {
    writeFileSync(join(dir, 'huge.txt'), Array.from({ length: 2500 }, (_, i) => String(i + 1)).join('\n'))
    const result = await call('read', { file_path: join(dir, 'huge.txt') })
    expect(text(result)).toContain('  2000\t2000')
    expect(text(result)).not.toContain('  2001\t')
    expect(text(result)).toContain('Showing lines 1-2000 of 2500. Call read with offset=2001 to continue.')
    writeFileSync(join(dir, 'wide.txt'), 'x'.repeat(5000) + '\nshort\n')
    const wide = text(await call('read', { file_path: 'wide.txt' }))
    expect(wide).toContain('x'.repeat(2000) + ' … [line truncated: 5000 characters in total]')
    expect(wide).not.toContain('x'.repeat(2001))
    expect(wide).toContain('1 line longer than 2000 characters was cut.')
  })

  it('handles a path with spaces and unicode, empty files, binary files and images', async () => {
    writeFileSync(join(dir, 'spaced näme 日本.md'), '# títle\n')
    expect(text(await call('read', { file_path: 'spaced näme 日本.md' }))).toBe('     1\t# títle')
    writeFileSync(join(dir, 'empty.txt'), '')
    expect(text(await call('read', { file_path: 'empty.txt' }))).toContain('is empty')
    writeFileSync(join(dir, 'blob.bin'), Buffer.from([1, 2, 0, 3, 255]))
    const binary = await call('read', { file_path: 'blob.bin' })
    expect(binary.error?.code).toBe('BINARY_FILE')
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(32, 7)])
    writeFileSync(join(dir, 'pic.dat'), png)
    const image = await call('read', { file_path: 'pic.dat' })
    expect(image.error?.code).toBe('IS_IMAGE')
    expect(text(image)).toContain('PNG image')
    expect(text(image)).toContain('read_image')
    const viewed = await call('read_image', { file_path: 'pic.dat' })
    expect(viewed.message.content[1]).toEqual({ type: 'image', mediaType: 'image/png', data: png.toString('base64') })
    expect((await call('read_image', { file_path: 'empty.txt' })).error?.code).toBe('NOT_AN_IMAGE')
  })

  it('reports missing files, directories and bad arguments as model-visible errors', async () => {
    const missing = await call('read', { file_path: 'nope.txt' })
    expect(missing.error?.code).toBe('NOT_FOUND')
    expect(text(missing)).toContain(join(dir, 'nope.txt'))
    expect((await call('read', { file_path: '.' })).error?.code).toBe('IS_DIRECTORY')
    expect((await call('read', { file_path: 'long.txt', offset: 0 })).error?.code).toBe('INVALID_ARGUMENTS')
    expect((await call('read', {})).error?.code).toBe('INVALID_ARGUMENTS')
  })
})

describe('write', () => {
  it('creates files with parents, refuses to overwrite an unread file, overwrites after a read', async () => {
    const created = await call('write', { file_path: 'new dir/ñew.txt', content: 'a\nb\n' })
    expect(text(created)).toBe(`Created ${join(dir, 'new dir/ñew.txt')} (2 lines, 4 bytes).`)
    writeFileSync(join(dir, 'theirs.txt'), 'keep me\n')
    const refused = await call('write', { file_path: 'theirs.txt', content: 'gone' })
    expect(refused.error?.code).toBe('FILE_NOT_READ')
    expect(text(refused)).toContain('Read it with the read tool first')
    expect(readFileSync(join(dir, 'theirs.txt'), 'utf8')).toBe('keep me\n')
    await call('read', { file_path: 'theirs.txt' })
    const over = await call('write', { file_path: 'theirs.txt', content: 'replaced\n' })
    expect(text(over)).toMatch(/^Overwrote /)
    expect(readFileSync(join(dir, 'theirs.txt'), 'utf8')).toBe('replaced\n')
    expect(readdirSync(dir).filter((n) => n.endsWith('.dsh-tmp'))).toEqual([])
  })

  it('keeps the mode of an overwritten file', async () => {
    writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\n')
    chmodSync(join(dir, 'run.sh'), 0o755)
    await call('read', { file_path: 'run.sh' })
    await call('write', { file_path: 'run.sh', content: '#!/bin/sh\necho hi\n' })
    expect((await import('node:fs')).statSync(join(dir, 'run.sh')).mode & 0o777).toBe(0o755)
  })
})

describe('edit', () => {
  it('replaces one exact match and carries a unified diff in meta', async () => {
    writeFileSync(join(dir, 'code.ts'), 'const a = 1\nconst b = 2\nconst c = 3\n')
    await call('read', { file_path: 'code.ts' })
    const result = await call('edit', {
      file_path: 'code.ts',
      old_string: 'const b = 2',
      new_string: 'const b = 20 // $& stays literal',
    })
    expect(result.error).toBeUndefined()
    expect(text(result)).toBe(`Edited ${join(dir, 'code.ts')}: replaced 1 occurrence (now line 2).`)
    expect(readFileSync(join(dir, 'code.ts'), 'utf8')).toBe(
      'const a = 1\nconst b = 20 // $& stays literal\nconst c = 3\n',
    )
    const diff = String(result.meta?.diff)
    expect(diff).toContain('--- a/code.ts')
    expect(diff).toContain('+++ b/code.ts')
    expect(diff).toContain('-const b = 2\n+const b = 20 // $& stays literal')
  })

  it('refuses zero and multiple matches naming the count; replace_all replaces them all', async () => {
    writeFileSync(join(dir, 'dup.txt'), 'x = 1\nx = 1\nx = 1\n')
    await call('read', { file_path: 'dup.txt' })
    const none = await call('edit', { file_path: 'dup.txt', old_string: 'y = 1', new_string: 'y = 2' })
    expect(none.error?.code).toBe('NO_MATCH')
    expect(text(none)).toContain('0 matches')
    const many = await call('edit', { file_path: 'dup.txt', old_string: 'x = 1', new_string: 'x = 2' })
    expect(many.error?.code).toBe('MULTIPLE_MATCHES')
    expect(text(many)).toContain('occurs 3 times')
    expect(text(many)).toContain('replace_all')
    expect(readFileSync(join(dir, 'dup.txt'), 'utf8')).toBe('x = 1\nx = 1\nx = 1\n')
    const all = await call('edit', {
      file_path: 'dup.txt',
      old_string: 'x = 1',
      new_string: 'x = 2',
      replace_all: true,
    })
    expect(text(all)).toContain('replaced all 3 occurrences')
    expect(readFileSync(join(dir, 'dup.txt'), 'utf8')).toBe('x = 2\nx = 2\nx = 2\n')
    const same = await call('edit', { file_path: 'dup.txt', old_string: 'x', new_string: 'x' })
    expect(same.error?.code).toBe('NO_CHANGE')
  })

  it('refuses an edit without a prior read and an edit of a stale file', async () => {
    writeFileSync(join(dir, 'unread.txt'), 'alpha\n')
    const unread = await call('edit', { file_path: 'unread.txt', old_string: 'alpha', new_string: 'beta' })
    expect(unread.error?.code).toBe('FILE_NOT_READ')
    expect(readFileSync(join(dir, 'unread.txt'), 'utf8')).toBe('alpha\n')
    await call('read', { file_path: 'unread.txt' })
    writeFileSync(join(dir, 'unread.txt'), 'alpha changed behind your back\n')
    const stale = await call('edit', { file_path: 'unread.txt', old_string: 'alpha', new_string: 'beta' })
    expect(stale.error?.code).toBe('FILE_STALE')
    expect(text(stale)).toContain('Read it again')
    expect(readFileSync(join(dir, 'unread.txt'), 'utf8')).toBe('alpha changed behind your back\n')
    // A different session's read does not help session S2.
    expect(
      (await call('edit', { file_path: 'unread.txt', old_string: 'alpha', new_string: 'beta' }, 'S2')).error?.code,
    ).toBe('FILE_NOT_READ')
  })

  it('keeps CRLF line endings, creates a file from an empty old_string, and reports a missing file', async () => {
    writeFileSync(join(dir, 'win.txt'), 'one\r\ntwo\r\nthree\r\n')
    await call('read', { file_path: 'win.txt' })
    const crlf = await call('edit', { file_path: 'win.txt', old_string: 'one\ntwo', new_string: 'uno\ndos' })
    expect(text(crlf)).toContain('CRLF')
    expect(readFileSync(join(dir, 'win.txt'), 'utf8')).toBe('uno\r\ndos\r\nthree\r\n')
    const created = await call('edit', { file_path: 'fresh/made.txt', old_string: '', new_string: 'hello\n' })
    expect(text(created)).toContain('Created')
    expect(readFileSync(join(dir, 'fresh/made.txt'), 'utf8')).toBe('hello\n')
    expect(String(created.meta?.diff)).toContain('+hello')
    const missing = await call('edit', { file_path: 'absent.txt', old_string: 'a', new_string: 'b' })
    expect(missing.error?.code).toBe('NOT_FOUND')
    const nonEmpty = await call('edit', { file_path: 'fresh/made.txt', old_string: '', new_string: 'x' })
    expect(nonEmpty.error?.code).toBe('EMPTY_OLD_STRING')
  })
})

describe('through the agent loop', () => {
  it('a scripted model writes, reads and edits a file; results reach the session log', async () => {
    const local = await createHarness({
      cwd: dir,
      plugins: [
        [LocalFileSystem, {}],
        [Policy, {}],
        [ToolFs, {}],
      ],
      script: [
        { toolCalls: [{ name: 'write', arguments: { file_path: 'loop/notes.md', content: 'draft one\n' } }] },
        {
          toolCalls: [
            { name: 'edit', arguments: { file_path: 'loop/notes.md', old_string: 'draft one', new_string: 'final' } },
          ],
        },
        { toolCalls: [{ name: 'read', arguments: { file_path: 'loop/notes.md' } }] },
        { text: 'done' },
      ],
    })
    try {
      await local.prompt('write notes')
      expect(readFileSync(join(dir, 'loop/notes.md'), 'utf8')).toBe('final\n')
      const results = local.session.events.filter((e) => e.type === 'tool/result')
      expect(results).toHaveLength(3)
      const last = results[2].data as ToolResultPayload
      expect(last.message.content).toEqual([{ type: 'text', text: '     1\tfinal' }])
      expect(String((results[1].data as ToolResultPayload).meta?.diff)).toContain('+final')
    } finally {
      await local.dispose()
    }
  })

  it('unloading the plugin removes its tools', async () => {
    const extra = await createHarness({ cwd: dir, plugins: [[LocalFileSystem, {}]] })
    try {
      const mounted = await extra.mount(ToolFs, {})
      expect(extra.ctx.tools.list().map((t) => t.name)).toEqual(['edit', 'read', 'read_image', 'write'])
      await mounted.dispose()
      expect(extra.ctx.tools.list()).toEqual([])
    } finally {
      await extra.dispose()
    }
  })
})
