// End-to-end: what a boot of the headless profile loads. Work that only a later call needs (the
// edit tool's diff library, the sandbox runner probe) must stay off the path of a boot that ends
// at once, such as `dsh --profile headless --help`; and each workspace package loads as its
// bundled entry (scripts/build.mjs), not as one module per source file. By default the rows come
// from the prelinked headless stack (scripts/prelink.mjs: one script with a V8 code cache in the
// dsh home), and no workspace package is loaded a second time beside it.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'

const REGISTER = fileURLToPath(new URL('./fixtures/module-log/register.mjs', import.meta.url))

const REPO = fileURLToPath(new URL('../../../../', import.meta.url))

/** Every module URL a real `dsh --profile headless --patch <empty> --help` loads (a full boot). */
async function bootModules(extraEnv: Record<string, string> = {}): Promise<string[]> {
  return (await bootLog(extraEnv)).loaded
}

/** The same boot: each module URL with the format Node loaded it as. */
async function bootLog(extraEnv: Record<string, string> = {}): Promise<{ loaded: string[]; formats: string[][] }> {
  const root = mkdtempSync(join(tmpdir(), 'dsh-boot-path-'))
  try {
    return await helpBoot(root, extraEnv)
  } finally {
    if (existsSync(root)) rmSync(root, { recursive: true, force: true })
  }
}

/** One `dsh --profile headless --patch <empty> --help` (a full boot) with its home under `root`. */
async function helpBoot(
  root: string,
  extraEnv: Record<string, string | undefined> = {},
): Promise<{ loaded: string[]; formats: string[][]; stderr: string }> {
  const log = join(root, 'modules.txt')
  rmSync(log, { force: true })
  const env = {
    HOME: root,
    DSH_HOME: join(root, 'dsh'),
    DSH_TEST_MODULE_LOG: log,
    NODE_OPTIONS: `--import ${REGISTER}`,
    // A first start as a user's: not the suite's shared code cache directory (cli-testkit's
    // inheritedEnv), unless a test names one.
    NODE_COMPILE_CACHE: undefined,
    ...extraEnv,
  }
  // An extra (empty) layer makes the launcher boot the tree for --help instead of printing the
  // bundle's fixed help text without a boot.
  const layer = join(root, 'empty.patch.yml')
  writeFileSync(layer, '[]\n')
  const run = await runDsh(['--profile', 'headless', '--patch', layer, '--help'], { cwd: root, env })
  expect(run.code, run.stderr).toBe(0)
  expect(run.stdout).toContain('--output-format')
  const formats = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '))
  return { loaded: formats.map(([url]) => url), formats, stderr: run.stderr }
}

/** The dist files a workspace package exports (`default` targets), by package directory. */
function exportedDistFiles(pkgDir: string): Set<string> {
  const { exports } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as {
    exports?: Record<string, unknown>
  }
  const files = new Set<string>()
  for (const value of Object.values(exports ?? {})) {
    const target = typeof value === 'string' ? value : (value as { default?: unknown })?.default
    if (typeof target === 'string' && target.startsWith('./dist/')) files.add(target.slice('./dist/'.length))
  }
  return files
}

describe('the boot path of dsh --profile headless --help', () => {
  it('loads no module that only a later call needs (the diff library), prelinked or not', {
    timeout: 60_000,
  }, async () => {
    for (const env of [{}, { DSH_NO_PRELINK: '1' }] as Array<Record<string, string>>) {
      const loaded = await bootModules(env)
      // The log works: the boot loaded the row modules, the edit tool among them.
      expect(
        loaded.some((url) =>
          url.includes(env.DSH_NO_PRELINK ? '/tool-fs/dist/' : '/prelinked/dsh/stack-bundles-headless.imports.mjs'),
        ),
      ).toBe(true)
      expect(loaded.filter((url) => /\/node_modules\/diff\//.test(url))).toEqual([])
    }
  })

  it('takes the rows from the prelinked headless stack, and loads no workspace package twice', {
    timeout: 60_000,
  }, async () => {
    const loaded = await bootModules()
    // The stack's script is compiled by app-boot (vm.Script), not imported: only its imports
    // module goes through the module loader, and no layer file or chunk does.
    const prelinked = loaded.filter((url) => url.includes('/prelinked/dsh/')).map((url) => basename(fileURLToPath(url)))
    expect(prelinked).toEqual(['stack-bundles-headless.imports.mjs'])
    // Beside them, only what the host loads itself before the rows (the bins, app-boot and its
    // own imports): a row package's dist/ loaded here would be a second copy of bundled code.
    const manifest = JSON.parse(readFileSync(join(REPO, 'prelinked/dsh/manifest.json'), 'utf8')) as {
      hostFiles: string[]
    }
    const host = new Set(manifest.hostFiles)
    const others = loaded
      .filter(
        (url) => url.startsWith('file://') && !url.includes('/node_modules/.pnpm/') && !url.includes('/prelinked/'),
      )
      .map((url) => fileURLToPath(url).slice(REPO.length))
      .filter((file) => /\/dist\//.test(file) && !host.has(file))
    expect(others).toEqual([])
  })

  it('loads no CommonJS module through the ES module loader (Node lexes each for its export names)', {
    timeout: 60_000,
  }, async () => {
    // schemastery (CommonJS) is imported by the host (home-paths) and by most rows: through the
    // ES module loader Node first lexes its file for named exports, ~150 M instructions per boot;
    // required, it is the same object without that pass (.agents/notes/boot-cuts-2026-12-07.md).
    const { formats } = await bootLog()
    expect(formats.some(([url]) => url.includes('/prelinked/dsh/stack-bundles-headless.imports.mjs'))).toBe(true)
    expect(formats.filter(([, format]) => format === 'commonjs').map(([url]) => url)).toEqual([])
  })

  it("keeps the stack's code cache in the dsh home or NODE_COMPILE_CACHE's directory: written by the first boot, used by the next, none when turned off", {
    timeout: 90_000,
  }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-boot-cache-'))
    const cacheDir = join(root, 'dsh/.cache/compile')
    const debug = { DSH_DEBUG: '1' }
    const line = (stderr: string) => /rows from prelinked stack (\S+) \(code cache: (\w+)\)/.exec(stderr)?.slice(1)
    try {
      expect(line((await helpBoot(root, debug)).stderr)).toEqual(['stack-bundles-headless', 'absent'])
      // Node >= 22.1 keeps its own compile cache in a folder beside ours.
      const files = readdirSync(cacheDir).filter((name) => name.startsWith('prelink-'))
      expect(files).toEqual([expect.stringMatching(/^prelink-dsh-stack-bundles-headless-\w+\.v8$/)])
      expect(line((await helpBoot(root, debug)).stderr)).toEqual(['stack-bundles-headless', 'used'])
      // A cache V8 refuses (here: damaged) is reported and replaced by a good one.
      writeFileSync(join(cacheDir, files[0]), Buffer.alloc(4096, 7))
      expect(line((await helpBoot(root, debug)).stderr)).toEqual(['stack-bundles-headless', 'rejected'])
      expect(statSync(join(cacheDir, files[0])).size).toBeGreaterThan(100_000)
      expect(line((await helpBoot(root, debug)).stderr)).toEqual(['stack-bundles-headless', 'used'])
      // NODE_DISABLE_COMPILE_CACHE turns it off, as it does Node's own compile cache.
      rmSync(cacheDir, { recursive: true })
      expect(line((await helpBoot(root, { ...debug, NODE_DISABLE_COMPILE_CACHE: '1' })).stderr)).toEqual([
        'stack-bundles-headless',
        'off',
      ])
      expect(existsSync(cacheDir) ? readdirSync(cacheDir).filter((name) => name.startsWith('prelink-')) : []).toEqual(
        [],
      )
      // NODE_COMPILE_CACHE names where it goes instead (where Node >= 22.1 keeps its own): a boot
      // with another fresh home uses what the first one wrote there, and neither home gets one.
      const named = join(root, 'named-cache')
      expect(line((await helpBoot(root, { ...debug, NODE_COMPILE_CACHE: named })).stderr)).toEqual([
        'stack-bundles-headless',
        'absent',
      ])
      expect(readdirSync(named).filter((name) => name.startsWith('prelink-'))).toEqual([
        expect.stringMatching(/^prelink-dsh-stack-bundles-headless-\w+\.v8$/),
      ])
      rmSync(join(root, 'dsh'), { recursive: true })
      expect(line((await helpBoot(root, { ...debug, NODE_COMPILE_CACHE: named })).stderr)).toEqual([
        'stack-bundles-headless',
        'used',
      ])
      expect(existsSync(cacheDir) ? readdirSync(cacheDir).filter((name) => name.startsWith('prelink-')) : []).toEqual(
        [],
      )
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('puts the rows packages list in dsh.earlyRows in their own small entries, marked early', () => {
    const manifest = JSON.parse(readFileSync(join(REPO, 'prelinked/dsh/manifest.json'), 'utf8')) as {
      layers: Record<string, { modules: string[]; early?: boolean }>
    }
    const early = Object.entries(manifest.layers).filter(([, layer]) => layer.early)
    const files = (entry: string) =>
      manifest.layers[entry].modules.map((url) => fileURLToPath(url).slice(REPO.length)).sort()
    expect(early.map(([entry]) => entry).sort()).toEqual(['bundles-base.early', 'bundles-web.early'])
    expect(files('bundles-base.early')).toEqual(['packages/boot/cmdline/dist/index.js'])
    expect(files('bundles-web.early')).toEqual([
      'bundles/web/dist/startup.js',
      'packages/host/frontend-static/dist/index.js',
    ])
    // Each row is in one entry only, and the early web file stays small (the server, its gate and
    // the static files; no agent code).
    for (const [, layer] of early)
      for (const url of layer.modules)
        expect(manifest.layers['bundles-base'].modules.concat(manifest.layers['bundles-web'].modules)).not.toContain(
          url,
        )
    expect(statSync(join(REPO, 'prelinked/dsh/bundles-web.early.mjs')).size).toBeLessThan(150_000)
  })

  it('without prelinking, loads each workspace package as its bundled entries, not one module per source file', {
    timeout: 60_000,
  }, async () => {
    const loaded = await bootModules({ DSH_NO_PRELINK: '1' })
    const ours = loaded
      .filter((url) => url.startsWith('file://'))
      .map((url) => fileURLToPath(url))
      .map((path) => /^(.*\/(?:packages\/[^/]+\/[^/]+|bundles\/[^/]+))\/dist\/(.+)$/.exec(path))
      .filter((m): m is RegExpExecArray => m?.[1].startsWith(REPO) === true)
    const packages = new Set(ours.map((m) => m[1]))
    // The boot really went through many packages' dist/ (the log is not empty or partial).
    expect(packages.size).toBeGreaterThan(30)
    // Each loaded file is an exported entry (the bundle) or a chunk shared by a package's entries;
    // a per-file build would load session.js, store.js, ... beside each package's index.js.
    const strays = ours
      .filter((m) => !exportedDistFiles(m[1]).has(m[2]) && !/^chunk-[\w-]+\.js$/.test(basename(m[2])))
      .map((m) => `${m[1].slice(REPO.length)}/dist/${m[2]}`)
    expect(strays).toEqual([])
    expect(ours.length).toBeLessThan(packages.size * 1.5)
  })
})
