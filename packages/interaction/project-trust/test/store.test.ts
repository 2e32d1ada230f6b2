// The consent store on disk: mode 0600, per-content consent, revoke, list, and a damaged or unsafe
// file that counts as "nothing trusted" and is never overwritten.
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  commandTargets,
  hashItems,
  projectDir,
  projectFileDigests,
  shellCommandTargets,
  TrustStore,
  TrustStoreError,
  type TrustItem,
} from '../src/store.ts'

function fixture() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-trust-store-')))
  const project = join(root, 'project')
  mkdirSync(project)
  return { root, project, store: TrustStore.inHome(join(root, 'home')) }
}

const item = (command: string): TrustItem => ({
  file: '.mcp.json',
  kind: 'mcp-server',
  name: 'a',
  display: command,
  run: { command, args: [] },
})

describe('TrustStore', () => {
  it('records consent per directory, source and content, in a 0600 file', async () => {
    const { project, store } = fixture()
    const hash = hashItems('mcp', [item('one')])
    expect(store.isTrusted(project, 'mcp', hash)).toBe(false)
    await store.trust({ dir: project, source: 'mcp', hash, items: [item('one')] })
    expect(store.isTrusted(project, 'mcp', hash)).toBe(true)
    expect(statSync(store.path).mode & 0o777).toBe(0o600)
    // Other content, another source, another directory: not trusted.
    expect(store.isTrusted(project, 'mcp', hashItems('mcp', [item('two')]))).toBe(false)
    expect(store.isTrusted(project, 'hooks-claude-code', hash)).toBe(false)
    expect(store.isTrusted(join(project, 'sub'), 'mcp', hash)).toBe(false)
  })

  it('hashes content, not order or the display line', () => {
    const a = item('one')
    const b = { ...item('two'), name: 'b' }
    expect(hashItems('mcp', [a, b])).toBe(hashItems('mcp', [b, a]))
    expect(hashItems('mcp', [a])).toBe(hashItems('mcp', [{ ...a, display: 'shown differently' }]))
    expect(hashItems('mcp', [a])).not.toBe(hashItems('mcp', [{ ...a, run: { command: 'one', args: ['x'] } }]))
    expect(hashItems('mcp', [a])).not.toBe(hashItems('hooks-codex', [a]))
    // Key order inside an entry does not matter.
    expect(hashItems('mcp', [{ ...a, run: { args: [], command: 'one' } }])).toBe(hashItems('mcp', [a]))
  })

  it("replaces a source's consent when trusted again, lists and revokes", async () => {
    const { project, store } = fixture()
    await store.trust({ dir: project, source: 'mcp', hash: hashItems('mcp', [item('one')]), items: [item('one')] })
    await store.trust({ dir: project, source: 'mcp', hash: hashItems('mcp', [item('two')]), items: [item('two')] })
    expect(store.isTrusted(project, 'mcp', hashItems('mcp', [item('one')]))).toBe(false)
    const listed = store.list()
    expect(listed.map((e) => e.dir)).toEqual([project])
    expect(listed[0]!.sources.mcp!.items).toEqual([
      { file: '.mcp.json', kind: 'mcp-server', name: 'a', display: 'two' },
    ])
    expect(await store.revoke(project)).toBe(true)
    expect(await store.revoke(project)).toBe(false)
    expect(store.list()).toEqual([])
  })

  it('treats a damaged file as nothing trusted and never overwrites it', async () => {
    const { project, store } = fixture()
    const hash = hashItems('mcp', [item('one')])
    await store.trust({ dir: project, source: 'mcp', hash, items: [item('one')] })
    const damaged = readFileSync(store.path, 'utf8').slice(0, 40)
    writeFileSync(store.path, damaged)
    const read = store.read()
    expect(read.ok).toBe(false)
    expect(!read.ok && read.problem).toMatch(/trusted-projects\.json: damaged: not valid JSON/)
    expect(store.isTrusted(project, 'mcp', hash)).toBe(false)
    await expect(store.trust({ dir: project, source: 'mcp', hash, items: [] })).rejects.toThrow(
      /damaged.*nothing was changed/,
    )
    await expect(store.revoke(project)).rejects.toBeInstanceOf(TrustStoreError)
    expect(() => store.list()).toThrow(/damaged/)
    expect(readFileSync(store.path, 'utf8')).toBe(damaged)
  })

  it('refuses a well-formed file of the wrong shape, naming the field', () => {
    const { store } = fixture()
    mkdirSync(join(store.path, '..'), { recursive: true })
    writeFileSync(
      store.path,
      JSON.stringify({ version: 1, projects: { '/x': { sources: { mcp: { hash: 'nope', trustedAt: 'now' } } } } }),
      { mode: 0o600 },
    )
    const read = store.read()
    expect(!read.ok && read.problem).toContain('projects["/x"].sources.mcp.hash is not a SHA-256 hex digest')
    writeFileSync(store.path, JSON.stringify({ version: 2, projects: {} }))
    expect(!store.read().ok && (store.read() as { problem: string }).problem).toContain('unknown version 2')
  })

  it('ignores a store other users can write', async () => {
    const { project, store } = fixture()
    const hash = hashItems('mcp', [item('one')])
    await store.trust({ dir: project, source: 'mcp', hash, items: [item('one')] })
    chmodSync(store.path, 0o666)
    expect(store.isTrusted(project, 'mcp', hash)).toBe(false)
    expect(!store.read().ok && (store.read() as { problem: string }).problem).toMatch(
      /writable by other users \(mode 666\)/,
    )
  })

  it('names project directories by their real path', () => {
    const { root, project } = fixture()
    symlinkSync(project, join(root, 'link'))
    expect(projectDir(join(root, 'link'))).toBe(project)
    expect(() => projectDir(join(root, 'missing'))).toThrow(/no such directory/)
    writeFileSync(join(root, 'file'), '')
    expect(() => projectDir(join(root, 'file'))).toThrow(/not a directory/)
  })

  it('pins the project files a command line names, and only those', () => {
    const { root, project } = fixture()
    mkdirSync(join(project, 'tools'))
    writeFileSync(join(project, 'tools', 'server.sh'), 'echo one\n')
    writeFileSync(join(root, 'outside.sh'), 'echo outside\n')
    const words = ['sh', '-c', '"tools/server.sh"', join(root, 'outside.sh'), 'missing.sh', '--flag', 'tools']
    const first = projectFileDigests(project, words)
    expect(Object.keys(first)).toEqual(['tools/server.sh'])
    writeFileSync(join(project, 'tools', 'server.sh'), 'echo two\n')
    expect(projectFileDigests(project, words)['tools/server.sh']).not.toBe(first['tools/server.sh'])
    // A symlink inside the project that points outside it is not the project's file.
    symlinkSync(join(root, 'outside.sh'), join(project, 'link.sh'))
    expect(projectFileDigests(project, ['link.sh'])).toEqual({})
  })

  it('picks the executed files of a command line, not its data files', () => {
    expect(commandTargets(['node', 'tools/server.js', '--db', 'data/app.db'])).toEqual(['node', 'tools/server.js'])
    expect(commandTargets(['./bin/server', '--db', 'data/app.db'])).toEqual(['./bin/server'])
    expect(commandTargets(['python3.12', '-u', 'srv.py'])).toEqual(['python3.12', 'srv.py'])
    expect(commandTargets(['deno', 'run', '-A', 'main.ts'])).toEqual(['deno', 'main.ts'])
    expect(commandTargets(['sh', '-c', 'echo hi > out'])).toEqual(['sh'])
    expect(
      shellCommandTargets('FOO=1 "$D"/.claude/hooks/check.sh --strict >> log.txt && node x.js 2> err.log'),
    ).toEqual(['$D/.claude/hooks/check.sh', 'node', 'x.js'])
  })
})
