// `.env` layering: inherited environment > project `.env` (cwd) > `$DSH_HOME/.env`.
// The project `.env` is writable by a confined command, so it supplies only the credential names
// of @dsh/home-paths' allowlist; `$DSH_HOME/.env` (the user's own file) supplies anything but
// DSH_HOME. See .agents/notes/project-env-trust.md.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseEnv } from 'node:util'
import {
  filterProjectEnv,
  findEnvSyntaxError,
  HOME_ENV_FORBIDDEN,
  homeLayout,
  ignoredEnvWarning,
  PROJECT_ENV_ALLOW_VAR,
  projectEnvAllowlist,
} from '@dsh/home-paths'
import { DshUserError } from '@dsh/app-compose'

/**
 * Parses a dotenv file; a missing file is `undefined`. An unreadable file, or a line that is not
 * `NAME=value`, is a one-line error naming the file and line (never the content).
 */
export function readEnvFile(file: string): Record<string, string> | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw new DshUserError(`${file}: cannot read: ${code ?? (error as Error).message}`)
  }
  const bad = findEnvSyntaxError(text)
  if (bad) throw new DshUserError(`${file}:${bad.line}: malformed .env file: ${bad.problem}`)
  const parsed = parseEnv(text)
  return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

/**
 * Fills `env` from `files` (highest precedence first) without overwriting anything already set.
 * Every key of every file is trusted: use `applyDotEnv` for the standard, filtered layering.
 * Returns each key it set with the file it came from.
 */
export function layerEnv(env: NodeJS.ProcessEnv, files: readonly string[]): Record<string, string> {
  const applied: Record<string, string> = {}
  for (const file of files) {
    const values = readEnvFile(file)
    if (!values) continue
    fill(env, values, file, applied)
  }
  return applied
}

function fill(
  env: NodeJS.ProcessEnv,
  values: Record<string, string>,
  file: string,
  applied: Record<string, string>,
): void {
  for (const [key, value] of Object.entries(values)) {
    if (env[key] !== undefined) continue
    env[key] = value
    applied[key] = file
  }
}

export interface DotEnvOptions {
  env?: NodeJS.ProcessEnv
  cwd: string
  home: string
  /** Receives each warning line (ignored names); default: `dsh: warning: ...` on stderr. */
  warn?: (line: string) => void
}

/**
 * The standard order for a dsh process: the project `.env` in `cwd` (allowlisted credential names
 * only), then `$DSH_HOME/.env` (everything but DSH_HOME). Ignored names get one warning line per
 * file. Returns each key it set with the file it came from.
 */
export function applyDotEnv(opts: DotEnvOptions): Record<string, string> {
  const env = opts.env ?? process.env
  const warn = opts.warn ?? ((line: string) => void process.stderr.write(`dsh: warning: ${line}\n`))
  const projectFile = join(opts.cwd, '.env')
  const homeFile = homeLayout(opts.home).env
  const project = readEnvFile(projectFile)
  // Run inside $DSH_HOME, the file is the workspace's too: it gets the project rule only.
  const home = homeFile === projectFile ? undefined : readEnvFile(homeFile)

  // Checked even without a project .env: a bad list is a mistake whether or not it applies today.
  const extra = env[PROJECT_ENV_ALLOW_VAR] ?? home?.[PROJECT_ENV_ALLOW_VAR]
  let allow: Set<string>
  try {
    allow = projectEnvAllowlist(
      extra,
      env[PROJECT_ENV_ALLOW_VAR] !== undefined ? PROJECT_ENV_ALLOW_VAR : `${homeFile}: ${PROJECT_ENV_ALLOW_VAR}`,
    )
  } catch (error) {
    throw new DshUserError((error as Error).message)
  }

  const applied: Record<string, string> = {}
  if (project) {
    const { kept, ignored } = filterProjectEnv(project, allow)
    if (ignored.length) warn(ignoredEnvWarning(projectFile, ignored, true))
    fill(env, kept, projectFile, applied)
  }
  if (home) {
    const forbidden = Object.keys(home).filter((key) => HOME_ENV_FORBIDDEN.includes(key))
    if (forbidden.length) warn(ignoredEnvWarning(homeFile, forbidden, false))
    for (const key of forbidden) delete home[key]
    fill(env, home, homeFile, applied)
  }
  return applied
}
