// `.env` layering: inherited environment > project `.env` (cwd) > `$DSH_HOME/.env`.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseEnv } from 'node:util'
import { homeLayout } from '@dsh/home-paths'
import { DshUserError } from './errors.ts'

/** Parses a dotenv file; a missing file is `undefined`, an unreadable one is a one-line error. */
export function readEnvFile(file: string): Record<string, string> | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new DshUserError(`${file}: cannot read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  const parsed = parseEnv(text)
  return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

/**
 * Fills `env` from `files` (highest precedence first) without overwriting anything already set.
 * Returns each key it set with the file it came from.
 */
export function layerEnv(env: NodeJS.ProcessEnv, files: readonly string[]): Record<string, string> {
  const applied: Record<string, string> = {}
  for (const file of files) {
    const values = readEnvFile(file)
    if (!values) continue
    for (const [key, value] of Object.entries(values)) {
      if (env[key] !== undefined) continue
      env[key] = value
      applied[key] = file
    }
  }
  return applied
}

/** The standard order for a dsh process: project `.env` in `cwd`, then `$DSH_HOME/.env`. */
export function applyDotEnv(opts: { env?: NodeJS.ProcessEnv; cwd: string; home: string }): Record<string, string> {
  return layerEnv(opts.env ?? process.env, [join(opts.cwd, '.env'), homeLayout(opts.home).env])
}
