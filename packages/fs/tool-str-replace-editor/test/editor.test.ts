import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import LocalFileSystem from '@dsh/fs-local'
import * as Policy from '@dsh/fs-observation-policy'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { ToolResultPayload } from '@dsh/tools'
import * as Editor from '../src/index.ts'
import { insertAfter } from '../src/index.ts'

let dir: string
let harness: Harness
let seq = 0

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-editor-'))
  harness = await createHarness({
    cwd: dir,
    plugins: [
      [LocalFileSystem, {}],
      [Policy, {}],
      [Editor, {}],
    ],
  })
})
afterAll(async () => {
  await harness.dispose()
  rmSync(dir, { recursive: true, force: true })
})

function call(args: object, session = 'S1'): Promise<ToolResultPayload> {
  return harness.ctx.tools.execute(
    { callId: `c${++seq}`, name: 'str_replace_editor', arguments: JSON.stringify(args) },
    { cwd: dir, sessionId: session },
  )
}
const text = (r: ToolResultPayload) => r.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n')
const file = (name: string) => readFileSync(join(dir, name), 'utf8')

describe('str_replace_editor', () => {
  it('create writes a new file (parents included) and counts lines', async () => {
    const r = await call({ command: 'create', path: 'src/new dir/ü.txt', file_text: 'one\ntwo\n' })
    expect(text(r)).toBe(`Created ${join(dir, 'src/new dir/ü.txt')} (2 lines, 8 bytes).`)
    expect(file('src/new dir/ü.txt')).toBe('one\ntwo\n')
  })

  it('view numbers lines, honours view_range and rejects a bad range', async () => {
    writeFileSync(join(dir, 'v.txt'), 'a\nb\nc\nd\n')
    expect(text(await call({ command: 'view', path: 'v.txt' }))).toBe('     1\ta\n     2\tb\n     3\tc\n     4\td')
    expect(text(await call({ command: 'view', path: 'v.txt', view_range: [2, 3] }))).toBe(
      '     2\tb\n     3\tc\n\n(Showing lines 2-3 of 4.)',
    )
    expect(text(await call({ command: 'view', path: 'v.txt', view_range: [3, -1] }))).toContain('     4\td')
    const bad = await call({ command: 'view', path: 'v.txt', view_range: [5, 6] })
    expect(bad.error?.code).toBe('INVALID_RANGE')
    expect(text(bad)).toContain('which has 4 lines')
    const missing = await call({ command: 'view', path: 'nope.txt' })
    expect(missing.error?.code).toBe('NOT_FOUND')
    expect(text(missing)).toContain('use create')
  })

  it('view lists a directory two levels deep without hidden entries', async () => {
    mkdirSync(join(dir, 'tree/a/b/c'), { recursive: true })
    writeFileSync(join(dir, 'tree/a/x.ts'), '')
    writeFileSync(join(dir, 'tree/a/b/c/deep.ts'), '')
    writeFileSync(join(dir, 'tree/.hidden'), '')
    const listing = text(await call({ command: 'view', path: 'tree' }))
    expect(listing.split('\n').slice(1)).toEqual(['a/', 'a/b/', 'a/x.ts'])
  })

  it('view refuses binary files', async () => {
    writeFileSync(join(dir, 'bin.dat'), Buffer.from([1, 0, 2, 3]))
    expect((await call({ command: 'view', path: 'bin.dat' })).error?.code).toBe('BINARY_FILE')
  })

  it('str_replace replaces exactly one occurrence and shows a numbered snippet', async () => {
    writeFileSync(join(dir, 'code.ts'), 'const a = 1\nconst b = 2\nconst c = 3\n')
    await call({ command: 'view', path: 'code.ts' })
    const r = await call({
      command: 'str_replace',
      path: 'code.ts',
      old_str: 'const b = 2',
      new_str: 'const b = 20\nconst bb = 21',
    })
    expect(r.error).toBeUndefined()
    expect(file('code.ts')).toBe('const a = 1\nconst b = 20\nconst bb = 21\nconst c = 3\n')
    expect(text(r)).toContain('(now lines 2-3)')
    expect(text(r)).toContain('     3\tconst bb = 21')
  })

  it('str_replace names zero and multiple matches and leaves the file alone', async () => {
    writeFileSync(join(dir, 'dup.txt'), 'x\ny\nx\n')
    await call({ command: 'view', path: 'dup.txt' })
    const many = await call({ command: 'str_replace', path: 'dup.txt', old_str: 'x', new_str: 'z' })
    expect(many.error?.code).toBe('MULTIPLE_MATCHES')
    expect(text(many)).toContain('occurs 2 times')
    expect(text(many)).toContain('lines 1, 3')
    const none = await call({ command: 'str_replace', path: 'dup.txt', old_str: 'q', new_str: 'z' })
    expect(none.error?.code).toBe('NO_MATCH')
    expect(file('dup.txt')).toBe('x\ny\nx\n')
    expect((await call({ command: 'str_replace', path: 'dup.txt', old_str: 'y', new_str: 'y' })).error?.code).toBe(
      'NO_CHANGE',
    )
    // deletion with new_str left out
    await call({ command: 'str_replace', path: 'dup.txt', old_str: 'y\n' })
    expect(file('dup.txt')).toBe('x\nx\n')
  })

  it('insert adds lines after insert_line, at the top with 0, and rejects a line past the end', async () => {
    writeFileSync(join(dir, 'ins.txt'), 'one\nthree\n')
    await call({ command: 'view', path: 'ins.txt' })
    await call({ command: 'insert', path: 'ins.txt', insert_line: 1, new_str: 'two' })
    await call({ command: 'insert', path: 'ins.txt', insert_line: 0, new_str: 'zero\n' })
    await call({ command: 'insert', path: 'ins.txt', insert_line: 4, new_str: 'four' })
    expect(file('ins.txt')).toBe('zero\none\ntwo\nthree\nfour\n')
    const bad = await call({ command: 'insert', path: 'ins.txt', insert_line: 9, new_str: 'x' })
    expect(bad.error?.code).toBe('INVALID_LINE')
    expect(text(bad)).toContain('from 0 (top of the file) to 5')
  })

  it('insert keeps a file without a final newline that way, and CRLF files CRLF', () => {
    expect(insertAfter('a\nb', 2, 'c', 'f').after).toBe('a\nb\nc')
    expect(insertAfter('a\r\nb\r\n', 1, 'x\ny', 'f').after).toBe('a\r\nx\r\ny\r\nb\r\n')
    expect(insertAfter('', 0, 'x', 'f').after).toBe('x\n')
  })

  it('a missing parameter is a model-visible error naming it', async () => {
    const r = await call({ command: 'insert', path: 'ins.txt', new_str: 'x' })
    expect(r.error?.code).toBe('MISSING_PARAMETER')
    expect(text(r)).toContain('needs insert_line')
    const schema = await call({ command: 'delete', path: 'x' })
    expect(schema.error?.code).toBe('INVALID_ARGUMENTS')
  })

  it('respects the fs gate: editing a file the session never viewed, or that changed since, is refused', async () => {
    writeFileSync(join(dir, 'gate.txt'), 'hello\n')
    const unread = await call({ command: 'str_replace', path: 'gate.txt', old_str: 'hello', new_str: 'bye' }, 'S2')
    expect(unread.error?.code).toBe('FILE_NOT_READ')
    const overwrite = await call({ command: 'create', path: 'gate.txt', file_text: 'x' }, 'S2')
    expect(overwrite.error?.code).toBe('FILE_NOT_READ')
    await call({ command: 'view', path: 'gate.txt' }, 'S2')
    writeFileSync(join(dir, 'gate.txt'), 'hello world, changed elsewhere\n')
    const stale = await call({ command: 'insert', path: 'gate.txt', insert_line: 0, new_str: 'x' }, 'S2')
    expect(stale.error?.code).toBe('FILE_STALE')
    expect(file('gate.txt')).toBe('hello world, changed elsewhere\n')
    await call({ command: 'view', path: 'gate.txt' }, 'S2')
    expect(
      (await call({ command: 'str_replace', path: 'gate.txt', old_str: 'hello', new_str: 'bye' }, 'S2')).error,
    ).toBeUndefined()
  })

  it('runs inside an agent turn', async () => {
    const h = await createHarness({
      cwd: dir,
      script: [
        {
          toolCalls: [
            { name: 'str_replace_editor', arguments: { command: 'create', path: 'agent.txt', file_text: 'hi\n' } },
          ],
        },
        { text: 'done' },
      ],
      plugins: [
        [LocalFileSystem, {}],
        [Policy, {}],
        [Editor, {}],
      ],
    })
    try {
      await h.prompt('make it')
      expect(file('agent.txt')).toBe('hi\n')
      expect(JSON.stringify(h.model.requests[1].messages.at(-1))).toContain('Created')
    } finally {
      await h.dispose()
    }
  })
})
