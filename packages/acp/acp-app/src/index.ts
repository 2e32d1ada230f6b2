// @dsh/acp-app: composes and boots the `dsh-acp` process: @dsh/bundle-base, this package's
// cordis.patch.yml (the ACP row), the home patch and any --patch files. Stdout carries ACP frames
// only; every diagnostic goes to stderr.
import { existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  applyDotEnv,
  applyLayers,
  bootComposition,
  composeLayers,
  dumpComposition,
  DshUserError,
  parseLayer,
  readLayerFile,
  resolveBundle,
  runTree,
  type Composition,
  type Layer,
} from '@dsh/app-boot'
import { WORLD_HELP, worldPatch } from '@dsh/app-boot/worlds'
import { homeLayout, resolveDshHome } from '@dsh/home-paths'
import { claimStdout } from '@dsh/acp'

const pkgFile = fileURLToPath(new URL('../package.json', import.meta.url))
const appDir = dirname(pkgFile)
const appLayerFile = resolve(appDir, 'cordis.patch.yml')

export const HELP = `Usage: dsh-acp [--world NAME] [--patch FILE]... [--dump-config]

Serves the Agent Client Protocol (newline-delimited JSON-RPC) on stdin/stdout for editors.
Stdout carries protocol frames only; logs go to stderr. Closing stdin cancels running work and exits.

Options:
  --world NAME    ${WORLD_HELP}
  --patch FILE    apply one more cordis.patch.yml layer (repeatable; after $DSH_HOME/cordis.patch.yml)
  --dump-config   print the composed rows as YAML and exit
  -h, --help      show this help
  --version       print the version

Environment: DSH_HOME (default ~/.dsh), DEEPSEEK_API_KEY, DEEPSEEK_BASE_URL, DSH_DEBUG=1.
`

export interface AcpArgs {
  action: 'serve' | 'dump' | 'help' | 'version' | 'error'
  patches: string[]
  error?: string
}

export function parseAcpArgs(argv: readonly string[]): AcpArgs {
  const patches: string[] = []
  let action: AcpArgs['action'] = 'serve'
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '-h' || a === '--help') return { action: 'help', patches }
    if (a === '--version') return { action: 'version', patches }
    if (a === '--dump-config') action = 'dump'
    else if (a === '--patch' || a.startsWith('--patch=')) {
      const value = a === '--patch' ? argv[++i] : a.slice('--patch='.length)
      if (!value) return { action: 'error', patches, error: '--patch needs a file' }
      patches.push(value)
    } else if (a === '--world' || a.startsWith('--world=')) {
      // The same flag as `dsh --world`: one more patch layer, where commands and files live.
      const world = worldPatch(a === '--world' ? argv[++i] : a.slice('--world='.length))
      if (world.error) return { action: 'error', patches, error: world.error }
      // A session server adds the world's session layer too (each session's own folder, consent).
      if (world.patch) patches.push(world.patch, ...(world.sessions ? [world.sessions] : []))
    } else return { action: 'error', patches, error: `unknown argument ${JSON.stringify(a)}` }
  }
  return { action, patches }
}

/** Rows the ACP surface relies on; each is inserted only when the earlier layers lack it. */
const FALLBACK_ROWS: { id: string; name: string }[] = [
  { id: 'session-persistence-jsonl', name: '@dsh/session-persistence-jsonl' },
  { id: 'session-persistence', name: '@dsh/session-persistence' },
  { id: 'session-checkpoint-policy', name: '@dsh/session-checkpoint-policy' },
  { id: 'approval', name: '@dsh/user-approval' },
  { id: 'permission-presets', name: '@dsh/permission-presets' },
]

export interface ComposeAcpOptions {
  home: string
  cwd: string
  patches?: string[]
}

/** The ordered layers of dsh-acp: base bundle, this app's layer, fallbacks, home patch, --patch files. */
export function composeAcp(opts: ComposeAcpOptions): Composition {
  const base = resolveBundle('@dsh/bundle-base', appDir, pkgFile)
  const layers: Layer[] = [
    readLayerFile(base.patch, 'bundle @dsh/bundle-base'),
    readLayerFile(appLayerFile, 'app @dsh/acp-app'),
  ]
  const ids = new Set(applyLayers(layers).rows.map((r) => r.row.id))
  const missing = FALLBACK_ROWS.filter((r) => !ids.has(r.id))
  if (missing.length) {
    const text = `- insert:\n${missing.map((r) => `    - id: ${r.id}\n      name: "${r.name}"\n`).join('')}`
    layers.push(parseLayer(text, appLayerFile, 'app @dsh/acp-app (fallback rows)'))
  }
  const homePatch = homeLayout(opts.home).patch
  if (existsSync(homePatch)) layers.push(readLayerFile(homePatch, 'home'))
  for (const p of opts.patches ?? []) {
    const file = resolve(opts.cwd, p)
    if (!existsSync(file)) throw new DshUserError(`--patch ${p}: no such file (${file})`, 2)
    layers.push(readLayerFile(file, `--patch ${p}`))
  }
  return composeLayers(layers, pkgFile, appDir)
}

export interface RunAcpOptions {
  argv: readonly string[]
  env?: NodeJS.ProcessEnv
  cwd?: string
}

/** The whole dsh-acp launch; resolves with the exit status. */
export async function runAcp(opts: RunAcpOptions): Promise<number> {
  const env = opts.env ?? process.env
  const cwd = opts.cwd ?? process.cwd()
  const args = parseAcpArgs(opts.argv)
  if (args.action === 'help') {
    process.stdout.write(HELP)
    return 0
  }
  if (args.action === 'error') {
    process.stderr.write(`dsh-acp: ${args.error}\ndsh-acp: see "dsh-acp --help"\n`)
    return 2
  }
  if (args.action === 'serve') claimStdout()
  try {
    const home = resolveDshHome(env)
    applyDotEnv({ env, cwd, home })
    const comp = composeAcp({ home, cwd, patches: args.patches })
    for (const w of comp.warnings) process.stderr.write(`dsh-acp: warning: ${w}\n`)
    if (args.action === 'dump') {
      process.stdout.write(dumpComposition(comp))
      return 0
    }
    return await runTree(
      () => bootComposition(comp, { bootInfo: { profile: 'acp', home, cwd, appArgs: [...opts.argv] }, prelink: 'acp' }),
      {
        name: 'dsh-acp',
        // Hot reload: edits of $DSH_HOME/cordis.patch.yml and the --patch files re-compose the tree.
        watch: {
          files: [homeLayout(home).patch, ...args.patches.map((p) => resolve(cwd, p))],
          recompose: () => composeAcp({ home, cwd, patches: args.patches }),
        },
      },
    )
  } catch (error) {
    if (error instanceof DshUserError) {
      const msg = error.message.replace(/^dsh: /gm, 'dsh-acp: ')
      process.stderr.write((msg.startsWith('dsh-acp: ') ? msg : `dsh-acp: ${msg}`) + '\n')
      return error.exitCode
    }
    throw error
  }
}
