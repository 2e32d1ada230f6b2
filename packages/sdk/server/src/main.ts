// The `dsh-jsonrpc-agent` launch: pick the composition (argument, $DSH_CORDIS_CONFIG, or the shipped
// default = @dsh/bundle-base + this package's cordis.patch.yml), layer .env files, boot it through
// @dsh/app-boot and run until the server stops (shutdown request or end of stdin) or a signal.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  applyDotEnv,
  bootComposition,
  composeLayers,
  dumpComposition,
  DshUserError,
  readLayerFile,
  runTree,
  type Layer,
} from '@dsh/app-boot'
import { WORLD_HELP, worldPatch } from '@dsh/app-boot/worlds'
import { resolveDshHome } from '@dsh/home-paths'
import { ExitCode } from '@dsh/surface-kit'

const pkgFile = fileURLToPath(new URL('../package.json', import.meta.url))
const version = (JSON.parse(readFileSync(pkgFile, 'utf8')) as { version: string }).version

export const HELP = `Usage: dsh-jsonrpc-agent [--world NAME] [--patch FILE]... [--dump-config] [CONFIG]

Serves the dsh SDK protocol (newline-delimited JSON-RPC 2.0) on stdin/stdout until stdin closes
or a client sends "shutdown". stdout carries protocol frames only; logs go to stderr.

The composition is the patch layer CONFIG, else the file named by $DSH_CORDIS_CONFIG, else the
shipped default: @dsh/bundle-base plus the sdk-server layer (approval + jsonrpc rows).

Options:
  --world NAME   ${WORLD_HELP}
  --patch FILE   apply FILE as one more patch layer over the composition (repeatable)
  --dump-config  print the composed rows as one YAML layer and exit
  -h, --help     show this help
  --version      print the version
`

export interface MainOptions {
  argv: readonly string[]
  env?: NodeJS.ProcessEnv
  cwd?: string
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
}

/** The default layers: the base bundle, then ours minus rows whose id the base already has. */
export function defaultLayers(): Layer[] {
  const require = createRequire(pkgFile)
  const basePkgFile = require.resolve('@dsh/bundle-base/package.json')
  const basePkg = JSON.parse(readFileSync(basePkgFile, 'utf8')) as { dsh: { bundle: { patch: string } } }
  const base = readLayerFile(resolve(dirname(basePkgFile), basePkg.dsh.bundle.patch), 'bundle @dsh/bundle-base')
  const ours = readLayerFile(fileURLToPath(new URL('../cordis.patch.yml', import.meta.url)), 'sdk-server default layer')
  const ids = new Set(base.ops.flatMap((op) => (op.kind === 'insert' ? op.rows.map((r) => r.id) : [])))
  ours.ops = ours.ops.map((op) => (op.kind === 'insert' ? { ...op, rows: op.rows.filter((r) => !ids.has(r.id)) } : op))
  return [base, ours]
}

function usage(stderr: NodeJS.WritableStream, message: string): number {
  stderr.write(`dsh-jsonrpc-agent: ${message} (see --help)\n`)
  return ExitCode.usage
}

export async function main(opts: MainOptions): Promise<number> {
  const env = opts.env ?? process.env
  const cwd = opts.cwd ?? process.cwd()
  const stdout = opts.stdout ?? process.stdout
  const stderr = opts.stderr ?? process.stderr
  const args = [...opts.argv]
  if (args.includes('-h') || args.includes('--help')) {
    stdout.write(HELP)
    return ExitCode.ok
  }
  if (args.includes('--version')) {
    stdout.write(`dsh-jsonrpc-agent ${version}\n`)
    return ExitCode.ok
  }
  const dump = args.includes('--dump-config')
  const patches: string[] = []
  const positional: string[] = []
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--dump-config') continue
    if (args[i] === '--patch') {
      const file = args[++i]
      if (file === undefined) return usage(stderr, '--patch needs a FILE')
      patches.push(file)
    } else if (args[i] === '--world' || args[i].startsWith('--world=')) {
      // The same flag as `dsh --world`: one more patch layer, where commands and files live.
      const world = worldPatch(args[i] === '--world' ? args[++i] : args[i].slice('--world='.length))
      if (world.error) return usage(stderr, world.error)
      // A session server adds the world's session layer too (each session's own folder, consent).
      if (world.patch) patches.push(world.patch, ...(world.sessions ? [world.sessions] : []))
    } else if (args[i].startsWith('-')) return usage(stderr, `unknown option ${args[i]}`)
    else positional.push(args[i])
  }
  if (positional.length > 1) return usage(stderr, 'at most one CONFIG file')
  try {
    const configFile = positional[0] ?? (env.DSH_CORDIS_CONFIG || undefined)
    const compose = () => {
      const layers = configFile ? [readLayerFile(resolve(cwd, configFile), `config ${configFile}`)] : defaultLayers()
      for (const file of patches) layers.push(readLayerFile(resolve(cwd, file), `--patch ${file}`))
      return composeLayers(layers, pkgFile, configFile ? dirname(resolve(cwd, configFile)) : dirname(pkgFile))
    }
    const home = resolveDshHome(env)
    applyDotEnv({ env, cwd, home })
    const comp = compose()
    for (const w of comp.warnings) stderr.write(`dsh-jsonrpc-agent: warning: ${w}\n`)
    if (dump) {
      // With --dump-config, stdout is for the dump, not for frames.
      stdout.write(dumpComposition(comp))
      return ExitCode.ok
    }
    return await runTree(
      () =>
        bootComposition(comp, { bootInfo: { profile: 'jsonrpc', home, cwd, appArgs: [] }, stderr, prelink: 'jsonrpc' }),
      {
        name: 'dsh-jsonrpc-agent',
        stderr,
        // Hot reload: edits of the user's layer files (CONFIG, --patch) re-compose the running tree.
        watch: {
          files: [...(configFile ? [resolve(cwd, configFile)] : []), ...patches.map((p) => resolve(cwd, p))],
          recompose: compose,
        },
      },
    )
  } catch (error) {
    if (error instanceof DshUserError) {
      stderr.write(`${error.message.replace(/^dsh: /, 'dsh-jsonrpc-agent: ')}\n`)
      return error.exitCode
    }
    throw error
  }
}
