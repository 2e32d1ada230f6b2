// @ts-check
import { fileURLToPath } from 'node:url'
import { worldPatch } from '@dsh/app-boot/worlds'
// Launcher argument parsing. Plain JavaScript so `dsh --help` and `dsh --version` run without
// a TypeScript loader. The launcher's value flags (--profile, --patch, --dump-config) are taken
// wherever they appear before `--`; --help, --version and the subcommand words (web, sessions,
// acp, jsonrpc) only count in front, before the first app argument. Everything else is handed to
// the app in order.

export const DEFAULT_PROFILE = 'headless'
/** The profile `-p/--print` selects when no --profile is given: the one-shot runner. */
export const PRINT_PROFILE = 'headless'

/**
 * Subcommands that run another bin of this installation in this process, exactly as that bin
 * runs when started on its own. Paths are relative to this file (the monorepo layout).
 * @type {Record<string, { bin: string; url: URL }>}
 */
export const SUBCOMMAND_BINS = {
  acp: { bin: 'dsh-acp', url: new URL('../../../acp/acp-app/bin/dsh-acp.mjs', import.meta.url) },
  jsonrpc: { bin: 'dsh-jsonrpc-agent', url: new URL('../../../sdk/server/bin/dsh-jsonrpc-agent.mjs', import.meta.url) },
  mcp: { bin: 'dsh-mcp', url: new URL('../../../mcp/mcp-client/bin/dsh-mcp.mjs', import.meta.url) },
  plugin: { bin: 'dsh-plugin', url: new URL('../../plugin-manager/bin/dsh-plugin.mjs', import.meta.url) },
  trust: { bin: 'dsh-trust', url: new URL('../../../interaction/project-trust/bin/dsh-trust.mjs', import.meta.url) },
}

/** Commands the launcher runs itself (first argument only): `dsh config check`, `dsh doctor`. */
export const OWN_COMMANDS = /** @type {const} */ (['config', 'doctor'])

/** The patch layer `dsh sessions` adds (see packages/session/sessions-cli). */
export const SESSIONS_PATCH = fileURLToPath(
  new URL('../../../session/sessions-cli/sessions.patch.yml', import.meta.url),
)

/**
 * `dsh web --world NAME`: the web host chooses the world per workspace (@dsh/bundle-web-worlds);
 * NAME is the world of folders that chose none. These layers replace the world's own layer there.
 * @type {Record<string, string[]>}
 */
export const WEB_WORLD_PATCHES = {
  local: [fileURLToPath(new URL('../../../../bundles/web-worlds/cordis.patch.yml', import.meta.url))],
  e2b: [
    fileURLToPath(new URL('../../../../bundles/web-worlds/cordis.patch.yml', import.meta.url)),
    fileURLToPath(new URL('../../../../bundles/web-worlds/e2b.patch.yml', import.meta.url)),
  ],
}

/** Patch layers `--world NAME` adds: shared with dsh-acp and dsh-jsonrpc-agent (@dsh/app-boot/worlds). */
export { WORLD_PATCHES } from '@dsh/app-boot/worlds'

/**
 * @typedef {object} LauncherArgs
 * @property {'help' | 'version' | 'run' | 'subcommand' | 'command' | 'error'} action
 * @property {string} profile
 * @property {boolean} profileGiven
 * @property {string[]} patches
 * @property {boolean} dumpConfig
 * @property {string[]} appArgs
 * @property {'acp' | 'jsonrpc' | 'mcp' | 'plugin' | 'trust'} [subcommand]  action 'subcommand': which bin runs, with appArgs as its argv
 * @property {'config' | 'doctor'} [command]  action 'command': which of the launcher's own commands runs, with appArgs as its arguments
 * @property {string} [error]  one-line usage error (action 'error', exit 2)
 */

/**
 * @param {readonly string[]} argv  process.argv.slice(2)
 * @returns {LauncherArgs}
 */
export function parseLauncherArgs(argv) {
  /** @type {LauncherArgs} */
  const out = {
    action: 'run',
    profile: DEFAULT_PROFILE,
    profileGiven: false,
    patches: [],
    dumpConfig: false,
    appArgs: [],
  }
  /** @param {string} message */
  const fail = (message) => ({ ...out, action: /** @type {const} */ ('error'), error: message })
  // Before the first app argument: subcommand words, --help and --version are the launcher's.
  let front = true
  let print = false
  /** @type {string | undefined} */
  let worldValue
  let worldAt = -1
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]
    /** @param {string} flag */
    const flagValue = (flag) => {
      if (token.startsWith(`${flag}=`)) return { value: token.slice(flag.length + 1), used: 0 }
      const next = argv[i + 1]
      if (next === undefined || next.startsWith('--')) return undefined
      return { value: next, used: 1 }
    }
    if (token === '--') {
      out.appArgs.push(...(front ? [] : ['--']), ...argv.slice(i + 1))
      break
    }
    if (token === '--profile' || token.startsWith('--profile=')) {
      const v = flagValue('--profile')
      if (!v?.value) return fail('--profile needs a profile name, e.g. --profile headless')
      if (out.profileGiven) return fail(`--profile given twice (${out.profile}, ${v.value})`)
      out.profile = v.value
      out.profileGiven = true
      i += v.used
    } else if (token === '--patch' || token.startsWith('--patch=')) {
      const v = flagValue('--patch')
      if (!v?.value) return fail('--patch needs a file, e.g. --patch ./my.patch.yml')
      out.patches.push(v.value)
      i += v.used
    } else if (token === '--world' || token.startsWith('--world=')) {
      const v = flagValue('--world')
      const world = worldPatch(v?.value)
      if (world.error) return fail(world.error)
      // Held until the profile is known: the web host takes the per-workspace layers instead.
      worldValue = v?.value
      worldAt = out.patches.length
      if (world.patch) out.patches.push(world.patch)
      i += v?.used ?? 0
    } else if (token === '--dump-config') {
      out.dumpConfig = true
    } else if (front && token === '--version') {
      return { ...out, action: 'version' }
    } else if (front && (token === '--help' || token === '-h') && !out.profileGiven) {
      return { ...out, action: 'help' }
    } else if (front && token === 'web' && !out.profileGiven) {
      out.profile = 'web'
      out.profileGiven = true
    } else if (front && token === 'sessions' && !out.profileGiven) {
      // `dsh sessions [list|show ID|search TEXT] ...`: the headless profile with the sessions
      // layer of @dsh/sessions-cli, which swaps the one-shot runner for the sessions command.
      out.profile = 'headless'
      out.profileGiven = true
      out.patches.push(SESSIONS_PATCH)
      out.appArgs = argv.slice(i + 1)
      return out
    } else if (i === 0 && (token === 'config' || token === 'doctor')) {
      return { ...out, action: 'command', command: token, appArgs: argv.slice(1) }
    } else if (i === 0 && Object.hasOwn(SUBCOMMAND_BINS, token)) {
      // `dsh acp ...` / `dsh jsonrpc ...`: the rest is that bin's own argv, untouched.
      return {
        ...out,
        action: 'subcommand',
        subcommand: /** @type {'acp' | 'jsonrpc' | 'mcp' | 'plugin' | 'trust'} */ (token),
        appArgs: argv.slice(1),
      }
    } else {
      front = false
      if (token === '-p' || token === '--print') print = true
      out.appArgs.push(token)
    }
  }
  // `-p` means one-shot whatever the default profile is; an explicit --profile still wins.
  if (print && !out.profileGiven) out.profile = PRINT_PROFILE
  if (out.profile === 'web' && worldValue !== undefined && Object.hasOwn(WEB_WORLD_PATCHES, worldValue)) {
    // The web host routes per workspace: the world's own layer (if any) gives way to these.
    const own = worldPatch(worldValue).patch ? 1 : 0
    out.patches.splice(worldAt, own, ...WEB_WORLD_PATCHES[worldValue])
  }
  return out
}

/** @param {string} version */
export function launcherHelp(version) {
  return `dsh ${version} - a coding-agent harness where everything is a plugin

Usage:
  dsh [launcher flags] [app arguments...]
  dsh [-c | -r [ID]] [--model M]        in an interactive terminal: the terminal UI (the tui
                                        profile; "dsh --profile tui --help" lists its keys)
  dsh -p "task" [options]               one-shot run (the headless profile); options may
                                        come before or after the task
  dsh sessions [--all] [--output-format json]
                                        stored sessions of this directory (--all: every one)
  dsh sessions show ID | search "TEXT"  one session's figures; sessions containing TEXT
  dsh acp [args...]                     the ACP agent on stdio (same as dsh-acp)
  dsh jsonrpc [args...]                 the JSON-RPC SDK agent on stdio (same as dsh-jsonrpc-agent)
  dsh mcp list [--profile NAME] [--json]
                                        the profile's MCP servers and their state
  dsh mcp serve [--transport stdio|http] dsh's tools and a dsh_agent tool as an MCP server
                                        ("dsh mcp serve --help")
  dsh plugin add|remove|update|list|new [--profile NAME] ...
                                        install plugin packages into a profile ("dsh plugin
                                        --help")
  dsh trust [DIR] | --revoke [DIR] | --list
                                        trust what a project directory ships for dsh to run
                                        (.mcp.json servers, hook files); "dsh trust --help"
  dsh web [app arguments...]            same as --profile web
  dsh config check [--profile NAME] [--json]
                                        validate settings.yaml, profiles and credentials files
                                        without starting (exit 1 on a problem)
  dsh doctor [--json]                   what this installation has and lacks: Node, sandbox,
                                        ripgrep, git, native add-ons, credentials, settings,
                                        the model endpoint, free disk; a fix per problem

Launcher flags (accepted anywhere before "--"; never passed to the app):
  --profile NAME    profile under $DSH_HOME/profiles (default: ${DEFAULT_PROFILE}); the
                    templates acp, headless, tui and web are created there on first use
  --patch FILE      apply FILE as one more patch layer (repeatable, applied in order)
  --world NAME      where commands and files live: local (default) or e2b (an E2B
                    sandbox; needs E2B_API_KEY; see bundles/world-e2b); with web,
                    each workspace chooses and NAME is the default (bundles/web-worlds)
  --dump-config     print the composed rows as one YAML layer and exit
  --version         print the version (first argument only)
  --help, -h        this help (first argument only); "dsh --profile NAME --help" or
                    "dsh -p --help" shows the app's help instead
  --                everything after it goes to the app unread

One-shot options (the headless app; "dsh -p --help" lists them all):
  -p, --print              one-shot: run the task, print the answer, exit
  -c, --continue           continue this directory's latest session
  -r, --resume [ID]        continue session ID; without ID, list this directory's sessions
  --output-format FMT      text | json | stream-json
  --model [PROVIDER/]MODEL, --max-steps N, --permission-mode MODE
  Piped stdin is read when stdin is not a terminal: it is the task when none is given,
  otherwise it is appended to the task as context.

Examples:
  dsh -p "summarise README.md"
  git diff | dsh -p "review this change" --output-format json
  dsh -c -p "and now the tests"
  dsh -r <session-id> -p "keep going"
  dsh --dump-config > composed.yml

Environment:
  DSH_HOME          dsh home directory (default ~/.dsh); also read: ./.env, then $DSH_HOME/.env
  DSH_DEBUG=1       print the plugin framework's log to stderr
`
}
