// `dsh plugin <command>`: argument parsing, one-line errors and the printed results.
import { applyDotEnv, DshUserError, listProfileTemplates } from '@dsh/app-boot'
import { resolveDshHome } from '@dsh/home-paths'
import { PluginManager, type PluginStatus } from './manager.ts'
import { scaffold } from './scaffold.ts'

export const PLUGIN_HELP = `Usage: dsh plugin <command> [--profile NAME] ...

  add <spec>        install a plugin package into every profile (or --profile's) and mount its row
                    spec: an npm name[@version], a package directory, or a .tgz
  remove <name>     unmount the package's rows and uninstall it (from every profile that has
                    it, or --profile's)
  update <name>[@version]
                    re-install (a local path again, else the registry's latest or the version)
                    in every profile that has it, or --profile's
  list [--check] [--json]
                    installed plugins of every profile (or --profile's) and whether each mounts;
                    --check mounts each profile's tree to be sure
  new <name> [--dir DIR]
                    scaffold a plugin package with a passing test in ./<name> (or DIR)

Options:
  --profile NAME    only this profile under $DSH_HOME/profiles (default: every profile: the
                    shipped templates acp, headless, tui and web plus any other under $DSH_HOME/profiles)

Plugins are installed with npm into $DSH_HOME/profiles/<NAME>/, their row goes into that
directory's cordis.patch.yml. A plugin whose row does not come up is rolled back.
`

export interface PluginCommandOptions {
  argv: readonly string[]
  installBase: string
  templatesDir: string
  env?: NodeJS.ProcessEnv
  cwd?: string
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
  importModule?: (url: string) => Promise<unknown>
}

interface Parsed {
  command: string
  args: string[]
  profile?: string
  check: boolean
  json: boolean
  dir?: string
}

function parse(argv: readonly string[]): Parsed | { error: string } | { help: true } {
  const [command, ...rest] = argv
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') return { help: true }
  const out: Parsed = { command, args: [], check: false, json: false }
  for (let i = 0; i < rest.length; i++) {
    const t = rest[i]
    const value = () => {
      const v = t.includes('=') ? t.slice(t.indexOf('=') + 1) : rest[++i]
      if (!v || (!t.includes('=') && v.startsWith('--'))) throw new Error(`${t.split('=')[0]} needs a value`)
      return v
    }
    try {
      if (t === '--help' || t === '-h') return { help: true }
      if (t === '--profile' || t.startsWith('--profile=')) out.profile = value()
      else if (t === '--dir' || t.startsWith('--dir=')) out.dir = value()
      else if (t === '--check') out.check = true
      else if (t === '--json') out.json = true
      else if (t.startsWith('--')) return { error: `unknown option ${t}` }
      else out.args.push(t)
    } catch (error) {
      return { error: (error as Error).message }
    }
  }
  const arity: Record<string, number> = { add: 1, remove: 1, update: 1, new: 1, list: 0 }
  if (!(command in arity))
    return { error: `unknown plugin command ${JSON.stringify(command)} (add, remove, update, list, new)` }
  if (out.args.length !== arity[command]) {
    return {
      error: arity[command]
        ? `${command} takes exactly one ${command === 'add' ? 'package spec' : command === 'new' ? 'package name' : 'package name'}`
        : `${command} takes no arguments`,
    }
  }
  return out
}

function formatList(profile: string, list: PluginStatus[]): string {
  if (!list.length) return `profile ${profile}: no plugins\n`
  const lines = [`profile ${profile}:`]
  for (const p of list) {
    const rows = p.rows.map((r) => `row ${r.id} ${r.state}${r.cause ? ` (${r.cause})` : ''}`).join(', ')
    lines.push(`  ${p.name}@${p.version}  ${[rows, p.note].filter(Boolean).join('; ')}`)
  }
  return lines.join('\n') + '\n'
}

/** Runs one `dsh plugin` command and resolves with the exit status (0 ok, 1 failure, 2 usage). */
export async function runPluginCommand(opts: PluginCommandOptions): Promise<number> {
  const env = opts.env ?? process.env
  const cwd = opts.cwd ?? process.cwd()
  const stdout = opts.stdout ?? process.stdout
  const stderr = opts.stderr ?? process.stderr
  const p = parse(opts.argv)
  if ('help' in p) {
    stdout.write(PLUGIN_HELP)
    return 0
  }
  if ('error' in p) {
    stderr.write(`dsh plugin: ${p.error}\ndsh plugin: see "dsh plugin --help"\n`)
    return 2
  }
  try {
    if (p.command === 'new') {
      const r = scaffold(p.args[0], cwd, p.dir)
      stdout.write(`created ${r.dir} (${r.files.join(', ')}); next: cd there, npm install && npm test\n`)
      return 0
    }
    const home = resolveDshHome(env)
    // The proof mounts rows whose `!!js` config may read the environment, as a real run would.
    applyDotEnv({ env, cwd, home })
    const manager = new PluginManager({
      home,
      cwd,
      installBase: opts.installBase,
      templatesDir: opts.templatesDir,
      importModule: opts.importModule,
      log: (line) => void stderr.write(line + '\n'),
    })
    // Without --profile a plugin goes to every profile (the shipped templates, created on first
    // use, and any other profile of this home); remove and update act where it is installed.
    const everyProfile = () => [...new Set([...listProfileTemplates(opts.templatesDir), ...manager.profiles()])].sort()
    const holding = (name: string) => manager.profiles().filter((profile) => manager.has(name, profile))
    /** Runs `task` per profile; a failure in one is reported and the others still run (exit 1 at the end). */
    const each = async (profiles: string[], task: (profile: string) => Promise<void> | void): Promise<number> => {
      let failed = 0
      for (const profile of profiles) {
        try {
          await task(profile)
        } catch (error) {
          // A usage error (a missing path, a bad spec) is the same for every profile: stop at once.
          if (!(error instanceof DshUserError) || profiles.length === 1 || error.exitCode === 2) throw error
          stderr.write(`dsh plugin: ${error.message.replace(/^dsh: /, '')}\n`)
          failed++
        }
      }
      return failed ? 1 : 0
    }
    switch (p.command) {
      case 'add': {
        const targets = p.profile ? [p.profile] : everyProfile()
        return await each(targets, async (profile) => {
          if (!p.profile && manager.has(p.args[0], profile)) {
            stdout.write(`${p.args[0]} is already in profile ${profile}; left as it is\n`)
            return
          }
          const r = await manager.add(p.args[0], profile)
          const what = r.mounted.kind === 'row' ? `row ${r.mounted.id}` : 'a bundle'
          stdout.write(`added ${r.name}@${r.version} to profile ${r.profile} as ${what}\n`)
        })
      }
      case 'remove': {
        const targets = p.profile ? [p.profile] : holding(p.args[0])
        if (!targets.length) throw new DshUserError(`${p.args[0]} is not installed in any profile`, 2)
        return await each(targets, (profile) => {
          const r = manager.remove(p.args[0], profile)
          stdout.write(
            `removed ${p.args[0]} from profile ${profile}${r.removed.length ? ` (${r.removed.join(', ')})` : ''}\n`,
          )
          for (const id of r.dangling)
            stderr.write(
              `dsh plugin: note: ${profile}/cordis.patch.yml still patches row ${id}, which no longer exists (a warning at each start); delete that entry if you no longer need it\n`,
            )
        })
      }
      case 'update': {
        const name = p.args[0].replace(/(?<=.)@[^@/]*$/, '')
        const targets = p.profile ? [p.profile] : holding(name)
        if (!targets.length) throw new DshUserError(`${name} is not installed in any profile`, 2)
        return await each(targets, async (profile) => {
          const r = await manager.update(p.args[0], profile)
          stdout.write(`updated ${r.name} in profile ${profile}: ${r.from} -> ${r.to}\n`)
        })
      }
      case 'list': {
        const all: Record<string, PluginStatus[]> = {}
        for (const name of manager.profiles(p.profile)) all[name] = await manager.list(name, p.check)
        if (p.json) stdout.write(JSON.stringify(all, null, 2) + '\n')
        else
          stdout.write(
            Object.entries(all)
              .map(([n, l]) => formatList(n, l))
              .join('') || 'no profiles yet\n',
          )
        return 0
      }
    }
    return 2
  } catch (error) {
    if (error instanceof DshUserError) {
      stderr.write(`dsh plugin: ${error.message.replace(/^dsh: /, '')}\n`)
      return error.exitCode
    }
    throw error
  }
}
