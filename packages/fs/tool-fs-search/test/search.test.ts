import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { ToolResultPayload } from '@dsh/tools'
import LocalSubprocess from '@dsh/subprocess-local'
import * as Search from '../src/index.ts'

let dir: string
let big: string
let harness: Harness
let seq = 0

beforeAll(async () => {
  // tmpfs when there is one: 100k small files on a disk filesystem take far longer to create.
  dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'dsh-search-'))
  const small = join(dir, 'small')
  mkdirSync(join(small, 'src', 'sub dir ü'), { recursive: true })
  mkdirSync(join(small, '.hidden'), { recursive: true })
  writeFileSync(join(small, 'src', 'main.ts'), 'export function main() {\n  return helper(1)\n}\n')
  writeFileSync(
    join(small, 'src', 'helper.ts'),
    'export const helper = (x: number) => x + 1\n// TODO: tidy --version\n',
  )
  writeFileSync(join(small, 'src', 'sub dir ü', 'ñoño 文件.ts'), 'const helper = "unicode path"\n')
  writeFileSync(join(small, 'src', 'notes.md'), 'helper docs\n')
  writeFileSync(join(small, '.hidden', 'secret.ts'), 'helper hidden\n')
  writeFileSync(join(small, '.ignore'), 'build/\n')
  mkdirSync(join(small, 'build'))
  writeFileSync(join(small, 'build', 'out.ts'), 'helper ignored\n')
  // The large tree: 1,000 directories x 100 files, each with one matching line.
  big = join(dir, 'big')
  for (let d = 0; d < 1000; d++) {
    const sub = join(big, `d${String(d).padStart(3, '0')}`)
    mkdirSync(sub, { recursive: true })
    for (let f = 0; f < 100; f++)
      writeFileSync(join(sub, `f${String(f).padStart(2, '0')}.txt`), `line one\nneedle ${d}-${f}\n`)
  }
  harness = await createHarness({
    cwd: small,
    plugins: [
      [LocalSubprocess, {}],
      [Search, {}],
    ],
  })
}, 60_000)
afterAll(async () => {
  await harness?.dispose()
  rmSync(dir, { recursive: true, force: true })
})

function call(name: string, args: object, cwd = join(dir, 'small')): Promise<ToolResultPayload> {
  return harness.ctx.tools.execute({ callId: `c${++seq}`, name, arguments: JSON.stringify(args) }, { cwd })
}
const text = (r: ToolResultPayload) => r.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')

describe('glob', () => {
  it('lists matching files relative to the working directory, sorted, skipping ignored and hidden files', async () => {
    const result = await call('glob', { pattern: '**/*.ts' })
    expect(result.error).toBeUndefined()
    expect(text(result)).toBe(
      ['Found 3 files matching "**/*.ts".', 'src/helper.ts', 'src/main.ts', 'src/sub dir ü/ñoño 文件.ts'].join('\n'),
    )
    const under = await call('glob', { pattern: '*.ts', path: 'src/sub dir ü' })
    expect(text(under)).toBe('Found 1 file matching "*.ts".\nsrc/sub dir ü/ñoño 文件.ts')
    const fromInside = await call('glob', { pattern: '*.md', path: '..' }, join(dir, 'small', 'src'))
    expect(text(fromInside).split('\n')[1]).toBe('notes.md')
    const outside = await call('glob', { pattern: 'main.ts', path: join(dir, 'small') }, join(dir, 'big'))
    expect(text(outside).split('\n')[1]).toBe(join(dir, 'small', 'src', 'main.ts'))
    expect(text(await call('glob', { pattern: '*.rs' }))).toMatch(/^No files match "\*\.rs" in /)
  })

  it('reports a missing path, a file path and an invalid glob as errors', async () => {
    const missing = await call('glob', { pattern: '*', path: 'no/such/dir' })
    expect(missing.error?.code).toBe('NOT_FOUND')
    expect(text(missing)).toContain('does not exist')
    expect((await call('glob', { pattern: '*', path: 'src/main.ts' })).error?.code).toBe('NOT_A_DIRECTORY')
    const bad = await call('glob', { pattern: '{a,b' })
    expect(bad.error?.code).toBe('INVALID_GLOB')
  })

  it('bounds a 100k-file result and states the cap', async () => {
    const result = await call('glob', { pattern: '*.txt' }, big)
    const lines = text(result).split('\n')
    expect(lines[0]).toBe(
      'Found 100000 files matching "*.txt"; showing the first 200 (cap: 200 files). Use a narrower pattern or path to see the rest.',
    )
    expect(lines).toHaveLength(201)
    expect(lines[1]).toBe('d000/f00.txt')
    expect(result.meta).toMatchObject({ total: 100000, shown: 200, capped: true })
  })
})

describe('grep', () => {
  it('groups matching lines by file with line numbers', async () => {
    const result = await call('grep', { pattern: 'helper\\(|const helper' })
    expect(text(result)).toBe(
      [
        'Found 3 matching lines for "helper\\\\(|const helper".',
        'src/helper.ts',
        '  1: export const helper = (x: number) => x + 1',
        '',
        'src/main.ts',
        '  2:   return helper(1)',
        '',
        'src/sub dir ü/ñoño 文件.ts',
        '  1: const helper = "unicode path"',
      ].join('\n'),
    )
  })

  it('filters by include, searches one file, and treats a dash pattern as a pattern', async () => {
    expect(text(await call('grep', { pattern: 'helper', include: '*.md' }))).toBe(
      'Found 1 matching line for "helper".\nsrc/notes.md\n  1: helper docs',
    )
    expect(text(await call('grep', { pattern: 'x \\+ 1', path: 'src/helper.ts' }))).toContain(
      'src/helper.ts\n  1: export const helper',
    )
    expect(text(await call('grep', { pattern: '--version' }))).toContain('  2: // TODO: tidy --version')
    expect(text(await call('grep', { pattern: 'absent-string' }))).toMatch(/^No matches for "absent-string" in /)
  })

  it('an invalid regex is a clear model-visible error', async () => {
    const result = await call('grep', { pattern: 'foo(bar' })
    expect(result.error?.code).toBe('INVALID_REGEX')
    expect(text(result)).toContain('not a valid regular expression')
    expect(text(result)).toContain('regex parse error')
    expect((await call('grep', { pattern: 'x', path: 'missing.txt' })).error?.code).toBe('NOT_FOUND')
    expect((await call('grep', { pattern: '' })).error?.code).toBe('INVALID_ARGUMENTS')
  })

  it('ignores RIPGREP_CONFIG_PATH (--no-config comes first)', async () => {
    const rc = join(dir, 'rgrc')
    writeFileSync(rc, '--hidden\n--no-ignore\n')
    process.env.RIPGREP_CONFIG_PATH = rc
    try {
      expect(text(await call('grep', { pattern: 'helper hidden|helper ignored' }))).toMatch(/^No matches/)
    } finally {
      delete process.env.RIPGREP_CONFIG_PATH
    }
    expect(Search.grepArgs(Search.Config({}), 'x', '.')[0]).toBe('--no-config')
    expect(Search.globArgs(Search.Config({}), 'x', '.')[0]).toBe('--no-config')
  })

  it('bounds a 100k-match result and states the cap', async () => {
    const result = await call('grep', { pattern: 'needle' }, big)
    const body = text(result)
    expect(body.split('\n')[0]).toBe(
      'Found 100000 matching lines for "needle"; showing the first 500 in 500 files (cap: 500 matching lines). Use a more specific pattern, path or include to see the rest.',
    )
    expect(body.split('\n').filter((l) => l.startsWith('  2: needle'))).toHaveLength(500)
    expect(Buffer.byteLength(body)).toBeLessThan(64 * 1024)
    expect(result.meta).toMatchObject({ total: 100000, shown: 500, capped: true })
  })

  it('cancelling a call kills rg and answers CANCELLED', async () => {
    const controller = new AbortController()
    const pending = harness.ctx.tools.execute(
      { callId: 'cancel', name: 'grep', arguments: JSON.stringify({ pattern: 'needle' }) },
      { cwd: big, signal: controller.signal },
    )
    setTimeout(() => controller.abort(new Error('user pressed stop')), 20)
    const result = await pending
    expect(result.error?.code).toBe('CANCELLED')
    expect(text(result)).toContain('user pressed stop')
  })

  it('runs through the agent loop and is unloaded with its plugin', async () => {
    const local = await createHarness({
      cwd: join(dir, 'small'),
      plugins: [
        [LocalSubprocess, {}],
        [Search, {}],
      ],
      script: [
        {
          toolCalls: [
            { name: 'grep', arguments: { pattern: 'TODO' } },
            { name: 'glob', arguments: { pattern: '*.md' } },
          ],
        },
        { text: 'ok' },
      ],
    })
    try {
      await local.prompt('find todos')
      const results = local.session.events
        .filter((e) => e.type === 'tool/result')
        .map((e) => e.data as ToolResultPayload)
      expect(text(results[0])).toContain('src/helper.ts\n  2: // TODO')
      expect(text(results[1])).toContain('src/notes.md')
      expect(local.ctx.tools.list().map((t) => t.name)).toEqual(['glob', 'grep'])
    } finally {
      await local.dispose()
    }
  })
})
