// Issue 24's acceptance through the real `dsh` bin: examples/plugin-hello packed with `npm pack`,
// `dsh plugin add <tgz> --profile headless`, a keyless headless run offers and runs its tool,
// `remove` makes it vanish; a package whose apply throws is rolled back and the profile still boots.
import { execFileSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const EXAMPLE = fileURLToPath(new URL('../../../../examples/plugin-hello/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'dsh-plugin-e2e-'))
const home = join(root, 'home')
const project = join(root, 'project')
const profileDir = join(home, 'profiles', 'headless')
mkdirSync(project, { recursive: true })
const mocks: MockServer[] = []
afterAll(async () => Promise.all(mocks.map((m) => m.close())))

const plugin = (...args: string[]) =>
  runDsh(['plugin', ...args], { cwd: project, env: { DSH_HOME: home }, timeoutMs: 120_000 })
const toolNames = (m: MockServer, i: number) =>
  ((m.requests[i].body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name)

async function headlessRun(steps: unknown[], task: string) {
  const mock = await startMockServer({ steps: steps as never })
  mocks.push(mock)
  const run = await runDsh(['--profile', 'headless', task], {
    cwd: project,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
  })
  return { run, mock }
}

/** A plugin package directory with the given `apply` body. */
function pluginDir(name: string, body: string, dsh: unknown = { plugin: {} }): string {
  const dir = join(root, 'src', name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', type: 'module', main: 'index.js', dsh }),
  )
  writeFileSync(
    join(dir, 'index.js'),
    `export const name = '${name}'\nexport const inject = ['tools']\nexport function apply(ctx) {\n${body}\n}\n`,
  )
  return dir
}

let tarball = ''
beforeAll(() => {
  // Pack from a copy: `npm pack` must not leave anything in the repository.
  const copy = join(root, 'plugin-hello')
  cpSync(EXAMPLE, copy, { recursive: true, filter: (src) => !src.includes('node_modules') })
  execFileSync('npm', ['pack', '--pack-destination', root, '--loglevel=error'], { cwd: copy, stdio: 'pipe' })
  tarball = join(root, 'dsh-plugin-hello-0.1.0.tgz')
}, 60_000)

describe('dsh plugin', () => {
  it('add installs the packed example, the next headless run offers and runs its tool, remove makes it vanish', async () => {
    const add = await plugin('add', tarball, '--profile', 'headless')
    expect(add.stderr).not.toMatch(/rolled back|error/i)
    expect(add).toMatchObject({ code: 0, stdout: 'added dsh-plugin-hello@0.1.0 to profile headless as row hello\n' })
    expect(readFileSync(join(profileDir, 'cordis.patch.yml'), 'utf8')).toMatch(
      /- insert:\n\s+- id: hello\n\s+name: dsh-plugin-hello\n\s+config:\n\s+greeting: Hello/,
    )
    expect(existsSync(join(profileDir, 'node_modules', 'dsh-plugin-hello', 'index.js'))).toBe(true)
    // Peers are not installed: the plugin shares the running dsh's cordis and schemastery.
    expect(existsSync(join(profileDir, 'node_modules', 'cordis'))).toBe(false)

    const list = await plugin('list')
    expect(list).toMatchObject({ code: 0 })
    expect(list.stdout).toContain('profile headless:\n  dsh-plugin-hello@0.1.0  row hello mounts\n')

    const { run, mock } = await headlessRun(
      [
        { toolCalls: [{ id: 'call_1', name: 'hello', arguments: { name: 'Ada' } }] },
        { expect: { lastRole: 'tool', lastContains: 'Hello, Ada!' }, text: 'Greeted Ada.' },
      ],
      'say hello to Ada',
    )
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Greeted Ada.\n' })
    expect(toolNames(mock, 0)).toContain('hello')
    expect(mock.requests).toHaveLength(2)

    const remove = await plugin('remove', 'dsh-plugin-hello', '--profile', 'headless')
    expect(remove).toMatchObject({ code: 0, stdout: 'removed dsh-plugin-hello from profile headless (hello)\n' })
    expect(readFileSync(join(profileDir, 'cordis.patch.yml'), 'utf8')).not.toContain('dsh-plugin-hello')
    expect(existsSync(join(profileDir, 'node_modules', 'dsh-plugin-hello'))).toBe(false)
    expect(JSON.parse(readFileSync(join(profileDir, 'package.json'), 'utf8')).dependencies ?? {}).toEqual({})

    const after = await headlessRun([{ text: 'No hello tool here.' }], 'say hello to Ada')
    expect(after.run, after.run.stderr).toMatchObject({ code: 0 })
    expect(toolNames(after.mock, 0)).not.toContain('hello')
  }, 240_000)

  it('a package whose apply throws is rolled back with one line, and the profile still boots', async () => {
    // The profile exists (first test or created now); record it exactly.
    await plugin('list', '--profile', 'headless').catch(() => undefined)
    const snapshot = () =>
      ['package.json', 'cordis.patch.yml', 'package-lock.json'].map((f) =>
        existsSync(join(profileDir, f)) ? readFileSync(join(profileDir, f), 'utf8') : null,
      )
    const dump = await runDsh(['--profile', 'headless', '--dump-config'], { cwd: project, env: { DSH_HOME: home } })
    expect(dump.code, dump.stderr).toBe(0)
    const before = snapshot()

    const broken = pluginDir('dsh-plugin-broken', "  throw new Error('broken on purpose')")
    const add = await plugin('add', broken, '--profile', 'headless')
    expect(add.code).toBe(1)
    expect(add.stdout).toBe('')
    const lines = add.stderr
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('installing '))
    expect(lines).toEqual([
      `dsh plugin: cannot add ${broken} to profile headless: row broken (dsh-plugin-broken) failed: apply failed: broken on purpose; rolled back`,
    ])
    expect(snapshot()).toEqual(before)
    expect(existsSync(join(profileDir, 'node_modules', 'dsh-plugin-broken'))).toBe(false)

    const { run } = await headlessRun([{ text: 'Still here.' }], 'hi')
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Still here.\n' })
  }, 240_000)

  it('bad input: a missing path, a package that is not a plugin, an unknown package, an unmet inject', async () => {
    const missing = await plugin('add', './nope.tgz')
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/^dsh plugin: \.\/nope\.tgz: no such file or directory \(.*nope\.tgz\)\n$/)

    const plain = join(root, 'src', 'plain')
    mkdirSync(plain, { recursive: true })
    writeFileSync(join(plain, 'package.json'), JSON.stringify({ name: 'plain-lib', version: '1.0.0' }))
    const notPlugin = await plugin('add', plain, '--profile', 'headless')
    expect(notPlugin.code).toBe(1)
    expect(notPlugin.stderr).toMatch(
      /dsh plugin: cannot add .*: plain-lib \(.*\): not a dsh plugin: package.json has no "dsh.plugin".*; rolled back\n$/,
    )
    expect(existsSync(join(profileDir, 'node_modules', 'plain-lib'))).toBe(false)

    const unknown = await plugin('remove', 'dsh-plugin-nothing')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toBe('dsh plugin: dsh-plugin-nothing is not installed in any profile\n')
    const unknownHere = await plugin('remove', 'dsh-plugin-nothing', '--profile', 'headless')
    expect(unknownHere.code).toBe(2)
    expect(unknownHere.stderr).toMatch(/^dsh plugin: dsh-plugin-nothing is not installed in profile headless/)

    const needy = pluginDir(
      'dsh-plugin-needy',
      '  ctx.tools.register({ name: "x", description: "x", parameters: { type: "object" }, execute: () => ({ content: "" }) })',
    )
    writeFileSync(
      join(needy, 'index.js'),
      `export const name = 'needy'\nexport const inject = ['noSuchService']\nexport function apply() {}\n`,
    )
    const unmet = await plugin('add', needy, '--profile', 'headless')
    expect(unmet.code).toBe(1)
    expect(unmet.stderr).toContain('row needy (dsh-plugin-needy) cannot mount: unmet inject: "noSuchService"')

    const usage = await plugin('add')
    expect(usage.code).toBe(2)
    expect(usage.stderr).toBe('dsh plugin: add takes exactly one package spec\ndsh plugin: see "dsh plugin --help"\n')
  }, 240_000)

  it('update re-installs a changed package from its recorded path; new scaffolds a package whose test passes and that installs', async () => {
    const dir = pluginDir(
      'dsh-plugin-ver',
      `  ctx.tools.register({ name: 'ver', description: 'v', parameters: { type: 'object' }, execute: () => ({ content: 'one' }) })`,
    )
    expect((await plugin('add', dir, '--profile', 'headless')).code).toBe(0)
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...pkg, version: '1.1.0' }))
    const update = await plugin('update', 'dsh-plugin-ver')
    expect(update, update.stderr).toMatchObject({
      code: 0,
      stdout: 'updated dsh-plugin-ver in profile headless: 1.0.0 -> 1.1.0\n',
    })
    expect((await plugin('remove', 'dsh-plugin-ver')).code).toBe(0)

    const made = await runDsh(['plugin', 'new', '@acme/dsh-plugin-wave'], { cwd: project, env: { DSH_HOME: home } })
    expect(made.code, made.stderr).toBe(0)
    const scaffold = join(project, 'dsh-plugin-wave')
    // The scaffold's own test, with its two dev dependencies taken from this checkout (no network).
    mkdirSync(join(scaffold, 'node_modules'), { recursive: true })
    for (const dep of ['cordis', 'schemastery']) {
      symlinkSync(
        realpathSync(fileURLToPath(new URL(`../node_modules/${dep}`, import.meta.url))),
        join(scaffold, 'node_modules', dep),
      )
    }
    const test = execFileSync(process.execPath, ['--test'], { cwd: scaffold, encoding: 'utf8' })
    expect(test).toMatch(/# pass 2\n# fail 0/)
    const again = await runDsh(['plugin', 'new', '@acme/dsh-plugin-wave'], { cwd: project, env: { DSH_HOME: home } })
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/already exists/)

    const add = await plugin('add', scaffold, '--profile', 'headless')
    expect(add, add.stderr).toMatchObject({
      code: 0,
      stdout: 'added @acme/dsh-plugin-wave@0.1.0 to profile headless as row wave\n',
    })
    expect((await plugin('remove', '@acme/dsh-plugin-wave')).code).toBe(0)
  }, 240_000)

  it("a bundle package is added to the profile's bundle list, its rows mount, and remove takes it out again", async () => {
    const dir = join(root, 'src', 'dsh-bundle-extra')
    mkdirSync(dir, { recursive: true })
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'dsh-bundle-extra',
        version: '2.0.0',
        type: 'module',
        dsh: { bundle: { patch: './cordis.patch.yml' } },
        files: ['cordis.patch.yml', 'tool.js'],
      }),
    )
    writeFileSync(join(dir, 'cordis.patch.yml'), '- insert:\n    - id: bundled\n      name: ./tool.js\n')
    writeFileSync(
      join(dir, 'tool.js'),
      `export const name = 'bundled'\nexport const inject = ['tools']\nexport function apply(ctx) {\n  ctx.tools.register({ name: 'bundled', description: 'b', parameters: { type: 'object' }, execute: () => ({ content: 'from the bundle' }) })\n}\n`,
    )
    const add = await plugin('add', dir, '--profile', 'headless')
    expect(add, add.stderr).toMatchObject({
      code: 0,
      stdout: 'added dsh-bundle-extra@2.0.0 to profile headless as a bundle\n',
    })
    const bundles = () => JSON.parse(readFileSync(join(profileDir, 'package.json'), 'utf8')).dsh.profile.bundles
    expect(bundles()).toEqual(['@dsh/bundle-base', '@dsh/bundle-headless', 'dsh-bundle-extra'])
    expect((await plugin('list', '--profile', 'headless', '--check')).stdout).toContain(
      '  dsh-bundle-extra@2.0.0  row bundled mounts\n',
    )

    const { run, mock } = await headlessRun([{ text: 'ok' }], 'hi')
    expect(run, run.stderr).toMatchObject({ code: 0 })
    expect(toolNames(mock, 0)).toContain('bundled')

    const remove = await plugin('remove', 'dsh-bundle-extra')
    expect(remove).toMatchObject({
      code: 0,
      stdout: 'removed dsh-bundle-extra from profile headless (bundle dsh-bundle-extra)\n',
    })
    expect(bundles()).toEqual(['@dsh/bundle-base', '@dsh/bundle-headless'])
  }, 240_000)
})
