// @ts-check
// Launcher argument parsing. Plain JavaScript so `dsh --help` and `dsh --version` run without
// a TypeScript loader. Launcher flags come first; the first token that is not one of them (or
// everything after `--`) starts the app's own arguments.

export const DEFAULT_PROFILE = 'headless'

/**
 * @typedef {object} LauncherArgs
 * @property {'help' | 'version' | 'run' | 'error'} action
 * @property {string} profile
 * @property {boolean} profileGiven
 * @property {string[]} patches
 * @property {boolean} dumpConfig
 * @property {string[]} appArgs
 * @property {string} [error]  one-line usage error (action 'error', exit 2)
 */

/**
 * @param {readonly string[]} argv  process.argv.slice(2)
 * @returns {LauncherArgs}
 */
export function parseLauncherArgs(argv) {
  /** @type {LauncherArgs} */
  const out = { action: 'run', profile: DEFAULT_PROFILE, profileGiven: false, patches: [], dumpConfig: false, appArgs: [] }
  /** @param {string} message */
  const fail = (message) => ({ ...out, action: /** @type {const} */ ('error'), error: message })
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]
    /** @param {string} flag */
    const valueOf = (flag) => {
      if (token.startsWith(`${flag}=`)) return { value: token.slice(flag.length + 1), used: 0 }
      const next = argv[i + 1]
      if (next === undefined || next.startsWith('--')) return undefined
      return { value: next, used: 1 }
    }
    if (token === '--') {
      out.appArgs = argv.slice(i + 1)
      return out
    }
    if (token === '--profile' || token.startsWith('--profile=')) {
      const v = valueOf('--profile')
      if (!v || !v.value) return fail('--profile needs a profile name, e.g. --profile headless')
      if (out.profileGiven) return fail(`--profile given twice (${out.profile}, ${v.value})`)
      out.profile = v.value
      out.profileGiven = true
      i += v.used
    } else if (token === '--patch' || token.startsWith('--patch=')) {
      const v = valueOf('--patch')
      if (!v || !v.value) return fail('--patch needs a file, e.g. --patch ./my.patch.yml')
      out.patches.push(v.value)
      i += v.used
    } else if (token === '--dump-config') {
      out.dumpConfig = true
    } else if (token === '--version') {
      return { ...out, action: 'version' }
    } else if ((token === '--help' || token === '-h') && !out.profileGiven) {
      return { ...out, action: 'help' }
    } else if (token === 'web' && !out.profileGiven) {
      out.profile = 'web'
      out.profileGiven = true
    } else if (token === 'sessions' && !out.profileGiven) {
      // `dsh sessions [--output-format json]`: the headless app lists stored sessions.
      out.profile = 'headless'
      out.profileGiven = true
      out.appArgs = ['--list-sessions', ...argv.slice(i + 1)]
      return out
    } else {
      out.appArgs = argv.slice(i)
      return out
    }
  }
  return out
}

/** @param {string} version */
export function launcherHelp(version) {
  return `dsh ${version} - a coding-agent harness where everything is a plugin

Usage:
  dsh [launcher flags] [app arguments...]
  dsh web [app arguments...]            same as --profile web
  dsh sessions [--output-format json]   list stored sessions (id, created, turns, cwd, title)

Launcher flags (they come first; the first other token starts the app's arguments):
  --profile NAME    profile under $DSH_HOME/profiles (default: ${DEFAULT_PROFILE}); the
                    templates headless and web are created there on first use
  --patch FILE      apply FILE as one more patch layer (repeatable, applied in order)
  --dump-config     print the composed rows as one YAML layer and exit
  --version         print the version
  --help, -h        this help; "dsh --profile NAME --help" shows the app's help instead
  --                end of launcher flags

Examples:
  dsh --profile headless "summarise README.md"
  dsh --profile headless --resume <session-id> "and now the tests"
  dsh --profile headless --continue "keep going"
  dsh --profile headless --dump-config > composed.yml

Environment:
  DSH_HOME          dsh home directory (default ~/.dsh); also read: ./.env, then $DSH_HOME/.env
  DSH_DEBUG=1       print the plugin framework's log to stderr
`
}
