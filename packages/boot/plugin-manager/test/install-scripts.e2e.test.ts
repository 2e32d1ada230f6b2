// `dsh plugin add|update` through the real `dsh` bin never run a package's lifecycle scripts (nor
// its dependencies'): every script of the fixtures below touches a marker file, and a package
// that is refused afterwards leaves nothing in the profile. Local directories and tarballs only
// (no network).
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'

const root = mkdtempSync(join(tmpdir(), 'dsh-plugin-scripts-'))
const home = join(root, 'home')
const project = join(root, 'project')
const markers = join(root, 'markers')
const profileDir = join(home, 'profiles', 'headless')
mkdirSync(project, { recursive: true })
mkdirSync(markers, { recursive: true })

const plugin = (...args: string[]) =>
  runDsh(['plugin', ...args], { cwd: project, env: { DSH_HOME: home }, timeoutMs: 120_000 })

/** Every lifecycle script npm may run for an installed package (or a packed directory) touches `markers/<script>-<name>`. */
const scripts = (name: string) =>
  Object.fromEntries(
    ['preinstall', 'install', 'postinstall', 'prepare', 'prepack', 'postpack'].map((s) => [
      s,
      `touch ${join(markers, `${s}-${name}`)}`,
    ]),
  )

function packageDir(name: string, manifest: Record<string, unknown>, index = ''): string {
  const dir = join(root, 'src', name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', type: 'module', main: 'index.js', scripts: scripts(name), ...manifest }),
  )
  writeFileSync(join(dir, 'index.js'), index)
  return dir
}

/** `npm pack` without running the scripts (the test's own packing must not leave markers). */
function pack(dir: string): string {
  const out = execFileSync(
    'npm',
    ['pack', '--ignore-scripts', '--json', '--pack-destination', root, '--loglevel=error'],
    { cwd: dir, encoding: 'utf8' },
  )
  return join(root, (JSON.parse(out) as { filename: string }[])[0].filename)
}

const profileFiles = () =>
  Object.fromEntries(
    ['package.json', 'package-lock.json', 'cordis.patch.yml'].map((f) => [
      f,
      existsSync(join(profileDir, f)) ? readFileSync(join(profileDir, f), 'utf8') : null,
    ]),
  )

describe('dsh plugin runs no lifecycle scripts', () => {
  it('a refused package (not a plugin) ran none of its scripts and leaves nothing in the profile', async () => {
    // The profile exists before the add, so its exact files can be compared afterwards.
    expect(
      (await runDsh(['--profile', 'headless', '--dump-config'], { cwd: project, env: { DSH_HOME: home } })).code,
    ).toBe(0)
    const before = profileFiles()
    const refused = packageDir('noisy-lib', {})
    const add = await plugin('add', refused, '--profile', 'headless')
    expect(add.code, add.stderr).toBe(1)
    expect(add.stderr).toMatch(/cannot add .*noisy-lib.*: not a dsh plugin: .*; rolled back\n$/)
    expect(readdirSync(markers)).toEqual([])
    expect(profileFiles()).toEqual(before)
    expect(existsSync(join(profileDir, 'node_modules', 'noisy-lib'))).toBe(false)
    expect(JSON.parse(readFileSync(join(profileDir, 'package.json'), 'utf8')).dependencies ?? {}).not.toHaveProperty(
      'noisy-lib',
    )
    expect(readFileSync(join(profileDir, 'cordis.patch.yml'), 'utf8')).not.toContain('noisy-lib')

    // The same refusal from a tarball.
    const tarball = pack(packageDir('noisy-tar', {}))
    const fromTar = await plugin('add', tarball, '--profile', 'headless')
    expect(fromTar.code, fromTar.stderr).toBe(1)
    expect(readdirSync(markers)).toEqual([])
    expect(profileFiles()).toEqual(before)
    expect(existsSync(join(profileDir, 'node_modules', 'noisy-tar'))).toBe(false)
  }, 240_000)

  it('an accepted plugin from a tarball and its dependencies ran no scripts at add or update (positive control: the row mounts)', async () => {
    const dep = pack(packageDir('noisy-dep', {}, 'export const x = 1\n'))
    // A git dependency (npm prepares one by running its prepare script unless scripts are off).
    const gitDep = packageDir('noisy-git', {}, 'export const y = 2\n')
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], {
        cwd: gitDep,
        stdio: 'pipe',
      })
    git('init', '-q')
    git('add', '.')
    git('commit', '-qm', 'fixture')
    const dir = packageDir(
      'dsh-plugin-noisy',
      { dsh: { plugin: {} }, dependencies: { 'noisy-dep': `file:${dep}`, 'noisy-git': `git+file://${gitDep}` } },
      "export const name = 'noisy'\nexport function apply() {}\n",
    )
    const tarball = pack(dir)
    const add = await plugin('add', tarball, '--profile', 'headless')
    expect(add, add.stderr).toMatchObject({
      code: 0,
      stdout: 'added dsh-plugin-noisy@1.0.0 to profile headless as row noisy\n',
    })
    expect(existsSync(join(profileDir, 'node_modules', 'noisy-dep', 'index.js'))).toBe(true)
    expect(existsSync(join(profileDir, 'node_modules', 'noisy-git', 'index.js'))).toBe(true)
    expect(readdirSync(markers)).toEqual([])

    const update = await plugin('update', 'dsh-plugin-noisy', '--profile', 'headless')
    expect(update, update.stderr).toMatchObject({ code: 0 })
    expect(readdirSync(markers)).toEqual([])

    // A directory is packed by npm itself (`--install-links`): its prepare/prepack stay off too.
    const dirPlugin = packageDir(
      'dsh-plugin-noisydir',
      { dsh: { plugin: {} } },
      "export const name = 'noisydir'\nexport function apply() {}\n",
    )
    const fromDir = await plugin('add', dirPlugin, '--profile', 'headless')
    expect(fromDir, fromDir.stderr).toMatchObject({ code: 0 })
    expect(readdirSync(markers)).toEqual([])
  }, 240_000)
})
