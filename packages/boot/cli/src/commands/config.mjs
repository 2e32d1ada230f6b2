// @ts-check
// `dsh config check [--profile NAME] [--json]`: composes each profile and mounts it once as a probe
// (no app/ready, nothing started), so every check a launch makes runs without starting anything:
// settings.yaml sections no plugin reads and values their schema refuses (file:line, key, value,
// the valid ones, a "did you mean"), malformed or loose credentials files, profile and home patch
// layers, row configs. Exit 0 when all is well, 1 on a problem, 2 on a usage error.
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

const HELP = `Usage: dsh config check [--profile NAME] [--json]

Validates the configuration without starting dsh: $DSH_HOME/settings.yaml (unknown sections,
invalid values), the credentials files, $DSH_HOME/cordis.patch.yml and each profile's patch
layer and row configs. Every profile under $DSH_HOME/profiles is checked (the default profile's
template when there is none yet); --profile checks one.

  --profile NAME   check this profile only
  --json           print {"ok", "home", "profiles", "problems": [{"profile", "message"}]}
  --help, -h       this help

Exit status: 0 all good, 1 a problem was found (one line each on stderr), 2 usage error.
`

/**
 * @typedef {{ profile: string, message: string }} ConfigProblem
 * @typedef {{ ok: boolean, home: string, profiles: string[], problems: ConfigProblem[], warnings: ConfigProblem[] }} ConfigReport
 */

/**
 * Probes every named profile (or every existing one) and collects each failure as one line.
 * Lines that several profiles share (settings.yaml, the home patch, credentials) are kept once.
 * @param {{ home: string, installBase: string, templatesDir: string, profile?: string, cwd?: string }} opts
 * @returns {Promise<ConfigReport>}
 */
export async function checkConfig(opts) {
  const { composeProfile, probeComposition, formatFailure, DshUserError } = await import('@dsh/app-boot')
  const { DEFAULT_PROFILE } = await import('../args.mjs')
  const profilesDir = join(opts.home, 'profiles')
  /** @type {string[]} */
  let profiles
  if (opts.profile) profiles = [opts.profile]
  else {
    profiles = existsSync(profilesDir)
      ? readdirSync(profilesDir)
          .filter((name) => existsSync(join(profilesDir, name, 'package.json')))
          .sort()
      : []
    if (!profiles.length) profiles = [DEFAULT_PROFILE]
  }
  /** @type {ConfigProblem[]} */
  const problems = []
  /** @type {ConfigProblem[]} */
  const warnings = []
  const seen = new Set()
  /** @param {string} profile @param {string} message */
  const add = (profile, message) => {
    const line = message.replace(/^dsh: /, '')
    if (seen.has(line)) return
    seen.add(line)
    problems.push({ profile, message: line })
  }
  for (const profile of profiles) {
    // A profile not created yet is checked from its template, without creating it.
    let profileDir = join(profilesDir, profile)
    if (!existsSync(join(profileDir, 'package.json'))) {
      const template = join(opts.templatesDir, profile)
      if (!existsSync(join(template, 'package.json'))) {
        add(profile, `unknown profile "${profile}" (no ${profileDir}, and no template of that name)`)
        continue
      }
      profileDir = template
    }
    try {
      const comp = composeProfile({
        home: opts.home,
        profileName: profile,
        profileDir,
        installBase: opts.installBase,
        cwd: opts.cwd,
      })
      // A patch naming a row this profile lacks is a warning, as at launch (the row may be another profile's).
      for (const w of comp.warnings) warnings.push({ profile, message: w })
      // Rows that print while mounting (a surface's banner) must not mix into this command's output.
      const write = process.stdout.write
      process.stdout.write = /** @type {typeof process.stdout.write} */ (process.stderr.write.bind(process.stderr))
      try {
        const failures = await probeComposition(comp, {
          bootInfo: { home: opts.home, cwd: opts.cwd ?? process.cwd(), appArgs: [] },
        })
        // Unmet injects are most often fallout of another row's failure: shown only alone.
        const roots = failures.filter((f) => f.kind !== 'inject')
        for (const f of roots.length ? roots : failures) add(profile, formatFailure(f))
      } finally {
        process.stdout.write = write
      }
    } catch (error) {
      if (error instanceof DshUserError) add(profile, error.message)
      else throw error
    }
  }
  return { ok: problems.length === 0, home: opts.home, profiles, problems, warnings }
}

/**
 * @param {readonly string[]} argv
 * @param {{ installBase: string, templatesDir: string }} install
 * @returns {Promise<number>}
 */
export async function run(argv, install) {
  const usage = (/** @type {string} */ message) => {
    process.stderr.write(`dsh: config: ${message}\ndsh: see "dsh config --help"\n`)
    return 2
  }
  let json = false
  /** @type {string | undefined} */
  let profile
  /** @type {string | undefined} */
  let sub
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') {
      process.stdout.write(HELP)
      return 0
    } else if (a === '--json') json = true
    else if (a === '--profile' || a.startsWith('--profile=')) {
      const value = a === '--profile' ? argv[++i] : a.slice('--profile='.length)
      if (!value || value.startsWith('-')) return usage('--profile needs a profile name')
      profile = value
    } else if (a.startsWith('-')) return usage(`unknown option ${a}`)
    else if (sub === undefined) sub = a
    else return usage(`unexpected argument ${JSON.stringify(a)}`)
  }
  if (sub === undefined) return usage('missing subcommand (dsh config check)')
  if (sub !== 'check')
    return usage(
      `unknown subcommand ${JSON.stringify(sub)}${sub.startsWith('ch') ? ' (did you mean "check"?)' : ''}; valid: check`,
    )
  const { resolveDshHome } = await import('@dsh/home-paths')
  const { applyDotEnv } = await import('@dsh/app-boot')
  const home = resolveDshHome(process.env)
  applyDotEnv({ env: process.env, cwd: process.cwd(), home })
  const report = await checkConfig({ home, ...install, profile, cwd: process.cwd() })
  if (json) process.stdout.write(JSON.stringify(report) + '\n')
  else {
    for (const w of report.warnings) process.stderr.write(`dsh: warning: ${w.profile}: ${w.message}\n`)
    for (const p of report.problems) process.stderr.write(`dsh: ${p.message}\n`)
    if (report.ok)
      process.stdout.write(`dsh: configuration ok (profiles: ${report.profiles.join(', ')}; home: ${home})\n`)
  }
  return report.ok ? 0 : 1
}
