#!/usr/bin/env node
// @ts-check
// The `dsh` launcher. `--help` and `--version` are answered here with nothing but node:fs, so
// they start as fast as node itself; a real boot loads the transpiled packages (dist/).
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { SUBCOMMAND_BINS, launcherHelp, parseLauncherArgs } from '../src/args.mjs'

const pkgUrl = new URL('../package.json', import.meta.url)

/**
 * Only the shipped one-shot profile, with nothing but a help flag (and `-p`) after the launcher
 * flags and no extra layer: a `--patch` may add rows whose help the fixed text cannot know.
 * @param {import('../src/args.mjs').LauncherArgs} a
 */
function isHeadlessHelp(a) {
  if (a.action !== 'run' || a.profile !== 'headless' || a.patches.length > 0 || a.dumpConfig) return false
  const rest = a.appArgs.filter((t) => t !== '-p' && t !== '--print')
  return rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')
}
/**
 * A shipped profile's fixed help text, read without a boot: the last of the template's bundles
 * whose package.json names a help module (`dsh.bundle.help`, a subpath exporting `HELP`) gives it.
 * The launcher knows bundles only through the profile's list, as a boot does; undefined when no
 * bundle of the profile has one.
 * @param {string} profile
 * @returns {Promise<string | undefined>}
 */
async function profileHelp(profile) {
  const template = JSON.parse(
    readFileSync(new URL(`../../../../profiles/${profile}/package.json`, import.meta.url), 'utf8'),
  )
  /** @type {string[]} */
  const bundles = template.dsh?.profile?.bundles ?? []
  const require = createRequire(import.meta.url)
  for (const bundle of [...bundles].reverse()) {
    const help = JSON.parse(readFileSync(require.resolve(`${bundle}/package.json`), 'utf8')).dsh?.bundle?.help
    if (typeof help === 'string') return (await import(`${bundle}/${help.replace(/^\.\//, '')}`)).HELP
  }
  return undefined
}
/**
 * The terminal UI is the default in an interactive terminal (stdin and stdout): with no --profile,
 * no -p and no task, only session and model flags (-c, -r [ID], --model M, --permission-mode M).
 * Anything else, and every run without a terminal, keeps the one-shot default.
 * @param {import('../src/args.mjs').LauncherArgs} a
 */
function wantsTui(a) {
  if (a.action !== 'run' || a.profileGiven || a.dumpConfig || !process.stdin.isTTY || !process.stdout.isTTY)
    return false
  const rest = a.appArgs
  for (let i = 0; i < rest.length; i++) {
    const t = rest[i]
    const next = rest[i + 1]
    if (t === '-c' || t === '--continue' || /^--(model|permission-mode|resume)=/.test(t)) continue
    if ((t === '-r' || t === '--resume') && (next === undefined || next.startsWith('-'))) continue
    if ((t === '-r' || t === '--resume' || t === '--model' || t === '--permission-mode') && next !== undefined) i++
    else return false
  }
  return true
}
// A reader that goes away early (`dsh sessions | head -1`, `dsh -p ... | head`) is the normal end of
// a pipe, not a crash: without a listener an EPIPE on stdout (or stderr, under `2>&1`) is an
// unhandled 'error' event, a stack trace and exit 1. Output to a closed pipe is dropped; the
// one-shot runner also stops its turn and exits 141. Any other stdout error is one line.
process.stdout.on('error', (/** @type {NodeJS.ErrnoException} */ error) => {
  if (error.code !== 'EPIPE') process.stderr.write(`dsh: cannot write to stdout: ${error.message}\n`)
})
process.stderr.on('error', () => {
  // Nowhere left to report it.
})
const args = parseLauncherArgs(process.argv.slice(2))
if (wantsTui(args)) args.profile = 'tui'
/** @type {string | undefined} */
let fixedHelp

if (args.action === 'help' || args.action === 'version') {
  const { version } = JSON.parse(readFileSync(pkgUrl, 'utf8'))
  process.stdout.write(args.action === 'help' ? launcherHelp(version) : `dsh ${version}\n`)
} else if (args.action === 'subcommand' && args.subcommand) {
  // `dsh acp` / `dsh jsonrpc`: run that bin itself in this process with the remaining arguments,
  // so the subcommand and the dedicated bin can never drift apart.
  const { url } = SUBCOMMAND_BINS[args.subcommand]
  process.argv = [process.argv[0], fileURLToPath(url), ...args.appArgs]
  await import(url.href)
} else if (args.action === 'command' && args.command) {
  // `dsh config ...` / `dsh doctor`: the launcher's own commands (src/commands/), through the
  // shared launcher for DSH_DEV, the compile cache and the exit code.
  const command = args.command
  const { launch } = await import('@dsh/app-boot/launch')
  await launch({
    name: 'dsh',
    bin: import.meta.url,
    argv: process.argv.slice(2),
    run: async () => {
      const mod = await import(`../src/commands/${command}.mjs`)
      return mod.run(args.appArgs, {
        installBase: fileURLToPath(pkgUrl),
        templatesDir: fileURLToPath(new URL('../../../../profiles/', import.meta.url)),
      })
    },
  })
} else if (isHeadlessHelp(args) && (fixedHelp = await profileHelp(args.profile)) !== undefined) {
  // `dsh -p --help` / `dsh --profile headless --help`: the one-shot profile's help is a fixed text
  // owned by its bundle, printed without booting the tree (a boot costs ~10x node's start-up).
  process.stdout.write(fixedHelp)
} else if (args.action === 'error') {
  process.stderr.write(`dsh: ${args.error}\ndsh: see "dsh --help"\n`)
  process.exitCode = 2
} else {
  // Workspace packages resolve to their transpiled dist/ (built by `pnpm install` through the
  // root `prepare` script, and before every test run); the shared launcher handles DSH_DEV (the
  // sources through tsx), the compile cache and the exit.
  const { launch } = await import('@dsh/app-boot/launch')
  await launch({
    name: 'dsh',
    bin: import.meta.url,
    argv: process.argv.slice(2),
    run: async () => {
      /** @type {typeof import('@dsh/app-boot')} */
      const { runApp } = await import('@dsh/app-boot')
      return runApp({
        profile: args.profile,
        patches: args.patches,
        dumpConfig: args.dumpConfig,
        appArgs: args.appArgs,
        installBase: fileURLToPath(pkgUrl),
        templatesDir: fileURLToPath(new URL('../../../../profiles/', import.meta.url)),
      })
    },
  })
}
