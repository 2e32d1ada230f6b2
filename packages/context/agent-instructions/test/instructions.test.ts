// Real directory trees in a temp dir, real fs tools (fs-local + tool-fs), a scripted model.
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { format } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { createHarness, type ScriptEntry, type ScriptedStep } from '@dsh/agent-loop-testkit'
import { Session, type AnySessionEvent } from '@dsh/session'
import LocalFileSystem from '@dsh/fs-local'
import * as ToolFs from '@dsh/tool-fs'
import * as Instructions from '../src/index.ts'

const base = mkdtempSync(join(tmpdir(), 'dsh-instructions-'))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let counter = 0

/** Creates `files` (path -> content) under a fresh directory; returns its path. */
function tree(files: Record<string, string>): string {
  const root = join(base, `t${++counter}`)
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true })
    if (path.endsWith('/')) mkdirSync(join(root, path), { recursive: true })
    else writeFileSync(join(root, path), content)
  }
  return root
}

const ours = (events: readonly AnySessionEvent[]) =>
  events.flatMap((e) =>
    e.type === 'user/message' && e.data.source.kind === 'plugin' && e.data.source.plugin === '@dsh/agent-instructions'
      ? [{ label: e.data.source.label, text: e.data.content.map((b) => (b.type === 'text' ? b.text : '')).join('') }]
      : [],
  )

async function setup(opts: { cwd: string; script: ScriptEntry[]; config?: object; session?: Session }) {
  const harness = await createHarness({
    cwd: opts.cwd,
    script: opts.script,
    session: opts.session,
    plugins: [
      [LocalFileSystem, {}],
      [ToolFs, {}],
      [Instructions, { globalDir: join(base, 'no-home'), ...opts.config }],
    ],
  })
  const warnings: string[] = []
  harness.ctx.logger.exporter({
    levels: { default: 3 },
    export: (m) => void warnings.push(format(...((m as { args?: unknown[] }).args ?? []))),
  })
  return { harness, warnings }
}

const read = (file_path: string): ScriptedStep => ({ toolCalls: [{ name: 'read', arguments: { file_path } }] })

describe('session-start chain', () => {
  it('loads the user-global file, then the project chain from the repository root down to the cwd', async () => {
    const root = tree({
      'AGENTS.md': 'outside the repository: never loaded',
      'home/AGENTS.md': 'global: be brief',
      'repo/.git/': '',
      'repo/AGENTS.md': 'root: run the tests',
      'repo/pkg/CLAUDE.md': 'pkg: fallback name',
      'repo/pkg/sub/AGENTS.md': 'sub: primary name wins',
      'repo/pkg/sub/CLAUDE.md': 'sub: ignored',
    })
    const cwd = join(root, 'repo/pkg/sub')
    const { harness } = await setup({
      cwd,
      script: [{ text: 'a' }, { text: 'b' }],
      config: { globalDir: join(root, 'home') },
    })
    await harness.prompt('hello')
    const loaded = ours(harness.session.events)
    expect(loaded.map((m) => m.label)).toEqual([
      join(root, 'home/AGENTS.md'),
      join(root, 'repo/AGENTS.md'),
      join(root, 'repo/pkg/CLAUDE.md'),
      join(root, 'repo/pkg/sub/AGENTS.md'),
    ])
    expect(loaded[0].text).toBe(
      `Instructions from ${join(root, 'home/AGENTS.md')} (user-global instructions, apply to every project):\nglobal: be brief`,
    )
    expect(loaded[1].text).toBe(
      `Instructions from ${join(root, 'repo/AGENTS.md')} (project instructions):\nroot: run the tests`,
    )
    // The model saw all four before the human message.
    const seen = JSON.stringify(harness.model.requests[0].messages)
    expect(seen.indexOf('sub: primary name wins')).toBeLessThan(seen.indexOf('hello'))
    expect(seen).not.toContain('never loaded')
    expect(seen).not.toContain('sub: ignored')

    await harness.prompt('again')
    expect(ours(harness.session.events)).toHaveLength(4)
    const events = harness.session.events
    await harness.dispose()

    // Resumed: the chain is in the log already and is not loaded twice.
    const resumed = await setup({
      cwd,
      script: [{ text: 'c' }],
      session: new Session({ cwd, events }),
      config: { globalDir: join(root, 'home') },
    })
    await resumed.harness.prompt('after resume')
    expect(ours(resumed.harness.session.events)).toHaveLength(4)
    await resumed.harness.dispose()
  })

  it('uses the cwd alone when no root marker is found, and loads nothing for an empty tree', async () => {
    const root = tree({ 'proj/AGENTS.md': 'only me', 'proj/deeper/': '' })
    const { harness } = await setup({
      cwd: join(root, 'proj'),
      script: [{ text: 'a' }],
      config: { rootMarkers: ['.no-such-marker'] },
    })
    await harness.prompt('hi')
    expect(ours(harness.session.events).map((m) => m.label)).toEqual([join(root, 'proj/AGENTS.md')])
    await harness.dispose()

    const empty = await setup({
      cwd: join(root, 'proj/deeper'),
      script: [{ text: 'a' }],
      config: { rootMarkers: ['.no-such-marker'] },
    })
    await empty.harness.prompt('hi')
    expect(ours(empty.harness.session.events)).toEqual([])
    await empty.harness.dispose()
  })

  it('cuts a huge file with a stated marker and keeps the session-start budget', async () => {
    const huge = 'é'.repeat(60_000) // 120,000 bytes of two-byte characters
    const root = tree({ '.git/': '', 'AGENTS.md': huge, 'a/AGENTS.md': 'x'.repeat(500), 'a/b/AGENTS.md': 'third' })
    const { harness } = await setup({
      cwd: join(root, 'a/b'),
      script: [{ text: 'a' }],
      config: { maxFileBytes: 1001, maxInitialBytes: 1400 },
    })
    await harness.prompt('hi')
    const [first, second, third] = ours(harness.session.events)
    expect(first.text).toContain(
      `[truncated: showing the first 1000 of 120000 bytes of ${join(root, 'AGENTS.md')}; read the file for the rest]`,
    )
    expect(first.text).not.toContain('\uFFFD')
    expect(second.text).toContain(`[truncated: showing the first 400 of 500 bytes`)
    expect(third.text).toContain(
      `[omitted: the 1400-byte budget for instructions loaded at session start is used up; read ${join(root, 'a/b/AGENTS.md')} (5 bytes) directly]`,
    )
    await harness.dispose()
  })
})

describe('nested discovery after filesystem tool calls', () => {
  it('reports new nested files, a changed file after an edit, and a removed file', async () => {
    const root = tree({
      '.git/': '',
      'AGENTS.md': 'root rules',
      'src/AGENTS.md': 'src rules',
      'src/lib/AGENTS.md': 'lib rules v1',
      'src/lib/deep/file.ts': 'export {}\n',
      'docs/readme.txt': 'docs\n',
    })
    const libFile = join(root, 'src/lib/AGENTS.md')
    const script: ScriptEntry[] = [
      read(join(root, 'src/lib/deep/file.ts')),
      { text: 'read it' },
      { toolCalls: [{ name: 'edit', arguments: { file_path: libFile, old_string: 'v1', new_string: 'v2' } }] },
      { text: 'edited' },
      () => {
        rmSync(libFile)
        return read(join(root, 'src/lib/deep/file.ts'))
      },
      read(join(root, 'docs/readme.txt')),
      { text: 'done' },
    ]
    const { harness } = await setup({ cwd: root, script })
    await harness.prompt('look at deep/file.ts')
    let msgs = ours(harness.session.events)
    expect(msgs.map((m) => m.label)).toEqual([join(root, 'AGENTS.md'), join(root, 'src/AGENTS.md'), libFile])
    expect(msgs[2].text).toBe(
      `Instructions from ${libFile} (nested instructions, apply to files under this directory):\nlib rules v1`,
    )
    // Injected after the tool result, so the second request of the turn carries them.
    expect(JSON.stringify(harness.model.requests[0].messages)).not.toContain('src rules')
    expect(JSON.stringify(harness.model.requests[1].messages)).toContain('lib rules v1')

    await harness.prompt('bump the version')
    msgs = ours(harness.session.events)
    expect(msgs).toHaveLength(4)
    expect(msgs[3].text).toBe(
      `Instructions from ${libFile} changed; this version replaces the earlier one:\nlib rules v2`,
    )

    await harness.prompt('remove it and look again')
    msgs = ours(harness.session.events)
    expect(msgs.slice(4)).toEqual([
      { label: libFile, text: `Instructions file ${libFile} was removed; its earlier instructions no longer apply.` },
    ])
    // docs/ has no instructions, the others are unchanged: nothing more.
    expect(harness.model.requests).toHaveLength(7)
    await harness.dispose()
  })

  it('ignores failed calls, paths outside the project, and stops when unloaded', async () => {
    const root = tree({
      'repo/.git/': '',
      'repo/a/AGENTS.md': 'a rules',
      'elsewhere/AGENTS.md': 'outside',
      'elsewhere/x.txt': 'x',
    })
    const repo = join(root, 'repo')
    const script: ScriptEntry[] = [
      read(join(repo, 'a/missing.txt')),
      read(join(root, 'elsewhere/x.txt')),
      { text: 'ok' },
      read(join(repo, 'a')),
      { text: 'ok' },
    ]
    const harness = await createHarness({
      cwd: repo,
      script,
      plugins: [
        [LocalFileSystem, {}],
        [ToolFs, {}],
      ],
    })
    const mounted = await harness.mount(Instructions, { globalDir: join(base, 'no-home') })
    await harness.prompt('1')
    expect(ours(harness.session.events)).toEqual([])
    await mounted.dispose()
    await harness.prompt('2')
    expect(ours(harness.session.events)).toEqual([])
    await harness.dispose()
  })

  it('discovers from a directory argument (glob/grep style `path`) and from relative paths', async () => {
    const root = tree({ '.git/': '', 'pkg/AGENTS.md': 'pkg rules', 'pkg/x.txt': 'x' })
    const { harness } = await setup({ cwd: root, script: [read('pkg/x.txt'), { text: 'ok' }] })
    await harness.prompt('relative')
    expect(ours(harness.session.events).map((m) => m.label)).toEqual([join(root, 'pkg/AGENTS.md')])
    await harness.dispose()
  })
})

describe('hostile trees', () => {
  it('skips a symlink loop with a warning, and loads a file reached through a directory loop once', async () => {
    const root = tree({ '.git/': '', 'd/AGENTS.md': 'd rules', 'd/x.txt': 'x', 'loopy/': '' })
    symlinkSync('AGENTS.md', join(root, 'loopy/AGENTS.md')) // points at itself
    symlinkSync('.', join(root, 'd/loop')) // d/loop/loop/... is d
    const script: ScriptEntry[] = [
      read(join(root, 'd/loop/loop/loop/x.txt')),
      read(join(root, 'd/x.txt')),
      { text: 'ok' },
    ]
    const { harness, warnings } = await setup({ cwd: join(root, 'loopy'), script })
    const result = await harness.prompt('go')
    expect(result.reason).toBe('completed')
    const msgs = ours(harness.session.events)
    expect(msgs.map((m) => m.text.split('\n')[1])).toEqual(['d rules'])
    expect(warnings.join('\n')).toContain(`skipped instruction file ${join(root, 'loopy/AGENTS.md')}: symlink loop`)
    await harness.dispose()
  })

  it('skips unreadable files with a warning and keeps going', async () => {
    const root = tree({
      '.git/': '',
      'AGENTS.md': 'root rules',
      'io/': '',
      'fifo/': '',
      'locked/AGENTS.md': 'secret',
      'ok/AGENTS.md': 'ok rules',
    })
    symlinkSync('/proc/self/mem', join(root, 'io/AGENTS.md')) // a regular file whose read fails with EIO
    execFileSync('mkfifo', [join(root, 'fifo/AGENTS.md')])
    chmodSync(join(root, 'locked/AGENTS.md'), 0)
    const script: ScriptEntry[] = [
      {
        toolCalls: ['io', 'fifo', 'locked', 'ok'].map((d) => ({
          name: 'read',
          arguments: { file_path: join(root, d, 'nothing-here') },
        })),
      },
      {
        toolCalls: ['io', 'fifo', 'locked', 'ok'].map((d) => ({
          name: 'write',
          arguments: { file_path: join(root, d, 'new.txt'), content: 'n' },
        })),
      },
      { text: 'ok' },
    ]
    const { harness, warnings } = await setup({ cwd: join(root, 'io'), script })
    const result = await harness.prompt('go')
    expect(result.reason).toBe('completed')
    const labels = ours(harness.session.events).map((m) => m.label)
    expect(labels).toContain(join(root, 'AGENTS.md'))
    expect(labels).toContain(join(root, 'ok/AGENTS.md'))
    expect(labels).not.toContain(join(root, 'fifo/AGENTS.md'))
    expect(labels).not.toContain(join(root, 'io/AGENTS.md'))
    const text = warnings.join('\n')
    expect(text).toContain(`skipped instruction file ${join(root, 'io/AGENTS.md')}`)
    expect(text).toContain(`skipped instruction file ${join(root, 'fifo/AGENTS.md')}: not a regular file`)
    // Root reads anything regardless of mode bits; elsewhere the locked file is a warning too.
    if (process.getuid?.() !== 0) {
      expect(labels).not.toContain(join(root, 'locked/AGENTS.md'))
      expect(text).toContain(`skipped instruction file ${join(root, 'locked/AGENTS.md')}: permission denied`)
    }
    // Each problem is warned once, though two calls touched each directory.
    expect(text.split(`${join(root, 'fifo/AGENTS.md')}`).length - 1).toBe(1)
    await harness.dispose()
  })

  it('refuses bad config at load', () => {
    expect(() => Instructions.Config({ maxFileBytes: 0 })).toThrow()
    expect(() =>
      Instructions.apply({ logger: () => ({}) } as never, Instructions.Config({ fileNames: ['a/AGENTS.md'] })),
    ).toThrow(/plain file name/)
    expect(() => Instructions.apply({ logger: () => ({}) } as never, Instructions.Config({ fileNames: [] }))).toThrow(
      /at least one/,
    )
  })
})
