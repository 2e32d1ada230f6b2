// `dsh trust`: shows what a project directory ships for dsh to run and records the user's consent,
// forgets it (`--revoke`), or lists every trusted directory (`--list`). What a project ships is
// asked of the profile's gated rows themselves: a row whose package.json says
// `"dsh": {"projectTrust": true}` exports `projectTrustRequests(config, cwd)`, the same function it
// gates with at run time, so the hash recorded here is the hash the run computes.
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { applyDotEnv, composeProfile, DshUserError, ensureProfile, type ResolvedRow } from '@dsh/app-boot'
import { resolveDshHome } from '@dsh/home-paths'
import { evaluateAll, projectDir, TrustStore, TrustStoreError, type Evaluation, type TrustRequest } from './store.ts'
import type { ProjectTrustRequests } from './index.ts'

export interface TrustCommandOptions {
  argv: string[]
  installBase: string
  templatesDir: string
  env?: NodeJS.ProcessEnv
  cwd?: string
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
}

export const TRUST_HELP = `Usage: dsh trust [DIR] [--profile NAME] [--patch FILE]...
       dsh trust --revoke [DIR]
       dsh trust --list [--json]

A project directory can ship files that make dsh start programs: MCP servers in .mcp.json, hook
commands in .claude/settings.json, .claude/settings.local.json and .codex/hooks.json. dsh runs them
only after you trusted that directory with exactly that content; a changed file asks again.

  dsh trust [DIR]        show what DIR (default: the current directory) ships for the profile's
                         rows and trust it as it is now
  --profile NAME         the profile whose rows are asked (default: headless)
  --patch FILE           one more patch layer (repeatable)
  --revoke [DIR]         forget every consent given to DIR
  --list                 every trusted directory and what was trusted (--json: as JSON)
  --help                 this help

Consents live in $DSH_HOME/trusted-projects.json (mode 0600).
`

type Parsed =
  | { action: 'help' }
  | { action: 'error'; error: string }
  | { action: 'trust'; dir?: string; profile: string; patches: string[] }
  | { action: 'revoke'; dir?: string }
  | { action: 'list'; json: boolean }

export function parseTrustArgs(argv: readonly string[]): Parsed {
  let mode: 'trust' | 'revoke' | 'list' = 'trust'
  let dir: string | undefined
  let profile: string | undefined
  const patches: string[] = []
  let json = false
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!
    if (token === '--help' || token === '-h') return { action: 'help' }
    if (token === '--revoke' || token === '--list') {
      const next = token === '--revoke' ? 'revoke' : 'list'
      if (mode !== 'trust' && mode !== next) return { action: 'error', error: '--revoke and --list cannot be combined' }
      mode = next
    } else if (token === '--json') json = true
    else if (token === '--profile' || token === '--patch') {
      const value = argv[++i]
      if (value === undefined || value === '' || value.startsWith('--'))
        return { action: 'error', error: `${token} needs a value` }
      if (token === '--profile') {
        if (profile !== undefined) return { action: 'error', error: `--profile given twice (${profile}, ${value})` }
        profile = value
      } else patches.push(value)
    } else if (token.startsWith('-')) return { action: 'error', error: `unknown option ${JSON.stringify(token)}` }
    else {
      if (dir !== undefined)
        return {
          action: 'error',
          error: `one directory at most (got ${JSON.stringify(dir)} and ${JSON.stringify(token)})`,
        }
      dir = token
    }
  }
  if (mode === 'list') {
    if (dir !== undefined) return { action: 'error', error: '--list takes no directory' }
    if (profile !== undefined || patches.length)
      return { action: 'error', error: '--list takes no --profile or --patch' }
    return { action: 'list', json }
  }
  if (json) return { action: 'error', error: '--json goes with --list' }
  if (mode === 'revoke') {
    if (profile !== undefined || patches.length)
      return { action: 'error', error: '--revoke takes no --profile or --patch' }
    return { action: 'revoke', ...(dir !== undefined ? { dir } : {}) }
  }
  return { action: 'trust', ...(dir !== undefined ? { dir } : {}), profile: profile ?? 'headless', patches }
}

/** The package.json nearest above a module file, or undefined. */
function packageOf(file: string): { dsh?: { projectTrust?: unknown } } | undefined {
  let dir = dirname(file)
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: unknown
        dsh?: { projectTrust?: unknown }
      }
      if (typeof pkg.name === 'string') return pkg
    } catch {
      // none here (or unreadable): keep walking up
    }
    const up = dirname(dir)
    if (up === dir) return undefined
    dir = up
  }
}

function flatten(rows: readonly ResolvedRow[]): ResolvedRow[] {
  return rows.flatMap((row) => [row, ...flatten(row.children ?? [])])
}

/** What the profile's gated rows (enabled or not) would run from `cwd`. */
export async function collectRequests(rows: readonly ResolvedRow[], cwd: string): Promise<TrustRequest[]> {
  const requests: TrustRequest[] = []
  for (const row of flatten(rows)) {
    if (!row.url?.startsWith('file:')) continue
    if (packageOf(fileURLToPath(row.url))?.dsh?.projectTrust !== true) continue
    const mod = (await import(row.url)) as { projectTrustRequests?: ProjectTrustRequests }
    if (typeof mod.projectTrustRequests !== 'function') {
      throw new DshUserError(
        `row "${row.row.id}" (${row.row.name}) is marked projectTrust but exports no projectTrustRequests`,
        1,
      )
    }
    const config =
      row.row.config !== null && typeof row.row.config === 'object' && !Array.isArray(row.row.config)
        ? (row.row.config as Record<string, unknown>)
        : undefined
    for (const request of mod.projectTrustRequests(config, cwd)) {
      // Two rows of the same source (a profile mounting it twice) declare it once.
      if (!requests.some((r) => r.source === request.source && resolve(r.dir) === resolve(request.dir)))
        requests.push(request)
    }
  }
  return requests
}

function describe(evaluations: readonly Evaluation[]): string {
  const lines: string[] = []
  for (const e of evaluations) {
    const files = [...new Set(e.items.map((item) => item.file))].join(', ')
    lines.push(`  ${e.label} (${files})${e.trusted ? ' - already trusted' : ''}:`)
    for (const item of e.items) lines.push(`    ${item.name}: ${item.display}`)
  }
  return lines.join('\n')
}

export async function runTrustCommand(opts: TrustCommandOptions): Promise<number> {
  const env = opts.env ?? process.env
  const cwd = opts.cwd ?? process.cwd()
  const stdout = opts.stdout ?? process.stdout
  const stderr = opts.stderr ?? process.stderr
  const args = parseTrustArgs(opts.argv)
  if (args.action === 'help') {
    stdout.write(TRUST_HELP)
    return 0
  }
  if (args.action === 'error') {
    stderr.write(`dsh trust: ${args.error}\ndsh trust: see "dsh trust --help"\n`)
    return 2
  }
  try {
    const home = resolveDshHome(env)
    const store = TrustStore.inHome(home)
    if (args.action === 'list') {
      const entries = store.list()
      if (args.json) stdout.write(JSON.stringify(entries, null, 2) + '\n')
      else if (entries.length === 0) stdout.write('No project is trusted.\n')
      else {
        for (const entry of entries) {
          stdout.write(`${entry.dir}\n`)
          for (const [source, consent] of Object.entries(entry.sources)) {
            stdout.write(`  ${source}, trusted ${consent.trustedAt} (sha256 ${consent.hash.slice(0, 12)}):\n`)
            for (const item of consent.items) stdout.write(`    ${item.name} (${item.file}): ${item.display}\n`)
          }
        }
      }
      return 0
    }
    const dir = projectDir(resolve(cwd, args.dir ?? '.'))
    if (args.action === 'revoke') {
      const had = await store.revoke(dir)
      stdout.write(
        had
          ? `Revoked: dsh no longer runs what ${dir} ships until you trust it again.\n`
          : `${dir} was not trusted; nothing changed.\n`,
      )
      return 0
    }
    applyDotEnv({ env, cwd: dir, home })
    const { dir: profileDir } = ensureProfile(home, args.profile, opts.templatesDir)
    const comp = composeProfile({
      home,
      profileName: args.profile,
      profileDir,
      patches: args.patches,
      installBase: opts.installBase,
      cwd,
    })
    for (const w of comp.warnings) stderr.write(`dsh trust: warning: ${w}\n`)
    const requests = (await collectRequests(comp.rows, dir)).filter((r) => r.items.length > 0)
    const evaluations = evaluateAll(store, requests)
    if (evaluations.length === 0) {
      stdout.write(`${dir} ships nothing dsh would run (for the profile "${args.profile}"); nothing was recorded.\n`)
      return 0
    }
    stdout.write(`${dir} ships, for dsh to run on this machine:\n${describe(evaluations)}\n`)
    const fresh = evaluations.filter((e) => !e.trusted)
    for (const e of fresh) await store.trust(e)
    stdout.write(
      fresh.length === 0
        ? 'Already trusted with exactly this content; nothing changed.\n'
        : `Trusted: dsh runs these until the files change ("dsh trust --revoke ${dir}" forgets it).\n`,
    )
    return 0
  } catch (error) {
    if (error instanceof TrustStoreError) {
      stderr.write(`dsh trust: ${error.message}\n`)
      return 1
    }
    if (error instanceof DshUserError) {
      const msg = error.message.startsWith('dsh: ') ? error.message.slice(5) : error.message
      stderr.write(`dsh trust: ${msg}\n`)
      return error.exitCode
    }
    throw error
  }
}
