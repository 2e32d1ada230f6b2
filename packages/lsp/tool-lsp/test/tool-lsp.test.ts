// The lsp tool and edit diagnostics on the real agent loop, with the real typescript-language-server.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import LspService from '@dsh/lsp'
import * as LspStdio from '@dsh/lsp-stdio'
import SubprocessLocal from '@dsh/subprocess-local'
import * as ToolLsp from '../src/index.ts'

const require = createRequire(import.meta.url)
const tsls = join(require.resolve('typescript-language-server/package.json'), '..', 'lib', 'cli.mjs')
const tsserver = require.resolve('typescript/lib/tsserver.js')

let harness: Harness | undefined
const dirs: string[] = []
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A plain file writer standing in for the fs tools: it really writes. */
const Write = {
  name: 'test-write',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register<{ file_path: string; content: string }>({
      name: 'write',
      description: 'Write a file.',
      parameters: {
        type: 'object',
        properties: { file_path: { type: 'string' }, content: { type: 'string' } },
        required: ['file_path', 'content'],
      },
      execute: (args, call) => {
        writeFileSync(resolve(call.cwd, args.file_path), args.content)
        return { content: `Wrote ${args.file_path}.` }
      },
    })
  },
}

function fixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-tool-lsp-'))
  dirs.push(dir)
  mkdirSync(join(dir, 'src'))
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', noEmit: true },
      include: ['src'],
    }),
  )
  writeFileSync(join(dir, 'src/math.ts'), 'export function add(a: number, b: number): number {\n  return a + b\n}\n')
  writeFileSync(
    join(dir, 'src/main.ts'),
    "import { add } from './math'\n\nconst total = add(1, 2)\nconsole.log(total)\n",
  )
  return dir
}

const lsp = (args: object) => ({ toolCalls: [{ name: 'lsp', arguments: args }] })

describe('@dsh/tool-lsp', () => {
  it('navigates with 1-based positions and appends the type error an edit introduced', {
    timeout: 180_000,
  }, async () => {
    const cwd = fixture()
    harness = await createHarness({
      cwd,
      script: [
        lsp({ operation: 'definition', file_path: 'src/main.ts', line: 3, column: 15 }),
        lsp({ operation: 'references', file_path: 'src/math.ts', line: 1, column: 17 }),
        lsp({ operation: 'hover', file_path: 'src/main.ts', line: 3, column: 7 }),
        lsp({ operation: 'definition', file_path: 'src/main.ts' }),
        lsp({ operation: 'hover', file_path: 'README.md', line: 1, column: 1 }),
        {
          toolCalls: [
            {
              name: 'write',
              arguments: {
                file_path: 'src/main.ts',
                content: "import { add } from './math'\n\nconst total: string = add(1, 2)\n",
              },
            },
          ],
        },
        {
          toolCalls: [
            {
              name: 'write',
              arguments: {
                file_path: 'src/main.ts',
                content: "import { add } from './math'\n\nconst total: number = add(1, 2)\n",
              },
            },
          ],
        },
        { text: 'done' },
      ] as never,
      plugins: [
        [LspService],
        [SubprocessLocal, {}],
        [
          LspStdio,
          {
            servers: {
              typescript: {
                command: process.execPath,
                args: [tsls, '--stdio'],
                extensions: ['.ts'],
                rootMarkers: ['tsconfig.json'],
                initializationOptions: { tsserver: { path: tsserver, useSyntaxServer: 'never' } },
              },
            },
          },
        ],
        [Write],
        [ToolLsp, {}],
      ] as never,
    })
    await harness.prompt('look around')
    const results = harness.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => (e.data as { message: { content: { text: string }[] } }).message.content[0].text)
    expect(results[0]).toBe('src/math.ts:1:17: export function add(a: number, b: number): number {')
    expect(results[1].split('\n').sort()).toEqual([
      "src/main.ts:1:10: import { add } from './math'",
      'src/main.ts:3:15: const total = add(1, 2)',
      'src/math.ts:1:17: export function add(a: number, b: number): number {',
    ])
    expect(results[2]).toContain('const total: number')
    expect(results[3]).toBe('Error [INVALID_ARGUMENTS]: operation definition needs line and column (1-based).')
    expect(results[4]).toBe(
      'Error [NO_LANGUAGE_SERVER]: no language server is configured or installed for README.md. Use grep or read instead.',
    )
    expect(results[5]).toBe(
      "Wrote src/main.ts.\n\nThe language server reports 1 error in src/main.ts after this change:\nsrc/main.ts:3:7 error TS2322: Type 'number' is not assignable to type 'string'.",
    )
    expect(results[6]).toBe('Wrote src/main.ts.')
    expect(harness.model.requests[0].system).toContain('Code navigation (lsp):')
  })

  it("bounds an edit's wait for diagnostics: a server that never answers leaves the result as it was", {
    timeout: 20_000,
  }, async () => {
    const dir = fixture()
    harness = await createHarness({
      cwd: dir,
      script: [
        {
          toolCalls: [
            { name: 'write', arguments: { file_path: 'src/main.ts', content: 'export const x: string = 1\n' } },
          ],
        },
        { text: 'done' },
      ] as never,
      plugins: [
        [LspService],
        [SubprocessLocal, {}],
        [
          LspStdio,
          {
            // Reads its input and answers nothing, not even initialize.
            servers: { mute: { command: 'sh', args: ['-c', 'cat >/dev/null'], extensions: ['.ts'] } },
            requestTimeoutMs: 600_000,
          },
        ],
        [Write],
        [ToolLsp, { diagnosticsTimeoutMs: 300 }],
      ] as never,
    })
    await harness.prompt('edit')
    const results = harness.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => (e.data as { message: { content: { text: string }[] } }).message.content[0].text)
    expect(results).toEqual(['Wrote src/main.ts.'])
  })

  it('starts the server of a file the agent reads, without making the read wait', { timeout: 20_000 }, async () => {
    const dir = fixture()
    const Read = {
      name: 'test-read',
      inject: ['tools'],
      apply(ctx: Context) {
        ctx.tools.register<{ file_path: string }>({
          name: 'read',
          description: 'Read a file.',
          parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
          execute: (args, call) => ({ content: readFileSync(resolve(call.cwd, args.file_path), 'utf8') }),
        })
      },
    }
    harness = await createHarness({
      cwd: dir,
      script: [{ toolCalls: [{ name: 'read', arguments: { file_path: 'src/main.ts' } }] }, { text: 'done' }] as never,
      plugins: [
        [LspService],
        [SubprocessLocal, {}],
        [
          LspStdio,
          {
            // Marks that it started, then answers nothing.
            servers: {
              mute: {
                command: 'sh',
                args: ['-c', 'touch started; cat >/dev/null'],
                extensions: ['.ts'],
                rootMarkers: ['tsconfig.json'],
              },
            },
            requestTimeoutMs: 600_000,
          },
        ],
        [Read],
        [ToolLsp, {}],
      ] as never,
    })
    await harness.prompt('read')
    const results = harness.session.events.filter((e) => e.type === 'tool/result')
    expect(results).toHaveLength(1)
    const deadline = Date.now() + 10_000
    while (!existsSync(join(dir, 'started')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(existsSync(join(dir, 'started'))).toBe(true)
  })
})
