// `dsh mcp add` and `dsh mcp remove`: the arguments (Claude Code's conventions) and the entries they
// write. User-scope servers live in the `mcpServers` section of `$DSH_HOME/settings.yaml` (written
// through the settings service, so comments and other sections stay); project-scope servers live
// in the project's `.mcp.json`, the file other agents read too.
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { checkServer } from './config.ts'

export type ConfigScope = 'user' | 'project'
export type AddTransport = 'stdio' | 'http' | 'sse'

export interface AddArgs {
  name: string
  scope: ConfigScope
  transport: AddTransport
  /** The `mcpServers` entry to write. */
  entry: Record<string, unknown>
}

const SCOPES = ['user', 'project']
const TRANSPORTS = ['stdio', 'http', 'sse']

function scopeOf(value: string): ConfigScope {
  if (value === 'local')
    throw new UsageError(
      "--scope local is not a dsh scope: servers are the user's (--scope user, in settings.yaml) or the project's (--scope project, in .mcp.json)",
    )
  if (!SCOPES.includes(value)) throw new UsageError(`--scope must be user or project, not ${JSON.stringify(value)}`)
  return value as ConfigScope
}

/** A usage mistake: one line, exit status 2. */
export class UsageError extends Error {}

/**
 * `add [options] NAME COMMAND_OR_URL [ARGS...]` (or `add [options] NAME -- COMMAND [ARGS...]`).
 * Options (`--transport/-t`, `--scope/-s`, `--env/-e KEY=VALUE`, `--header/-H 'Key: Value'`) are
 * read until the command or URL; every word after it, or after `--`, is the server's own.
 */
export function parseAdd(words: readonly string[]): AddArgs {
  let transport: AddTransport = 'stdio'
  let scope: ConfigScope = 'user'
  const env: Record<string, string> = {}
  const headers: Record<string, string> = {}
  const positional: string[] = []
  let rest: string[] | undefined
  const value = (option: string, next: string | undefined): string => {
    if (next === undefined) throw new UsageError(`${option} needs a value`)
    return next
  }
  for (let i = 0; i < words.length; i++) {
    const word = words[i]
    if (positional.length >= 2) {
      rest = words.slice(i) as string[]
      break
    }
    if (word === '--') {
      rest = words.slice(i + 1) as string[]
      break
    }
    const [flag, inline] =
      word.startsWith('--') && word.includes('=')
        ? [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]
        : [word, undefined]
    const take = () => inline ?? value(flag, words[++i])
    if (flag === '--transport' || flag === '-t') {
      const t = take()
      if (!TRANSPORTS.includes(t))
        throw new UsageError(`--transport must be stdio, http or sse, not ${JSON.stringify(t)}`)
      transport = t as AddTransport
    } else if (flag === '--scope' || flag === '-s') scope = scopeOf(take())
    else if (flag === '--env' || flag === '-e') {
      const pair = take()
      const at = pair.indexOf('=')
      if (at <= 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(pair.slice(0, at)))
        throw new UsageError(`--env takes KEY=VALUE, not ${JSON.stringify(pair)}`)
      env[pair.slice(0, at)] = pair.slice(at + 1)
    } else if (flag === '--header' || flag === '-H') {
      const header = take()
      const at = header.indexOf(':')
      if (at <= 0 || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(header.slice(0, at).trim()))
        throw new UsageError(`--header takes 'Name: value', not ${JSON.stringify(header)}`)
      headers[header.slice(0, at).trim()] = header.slice(at + 1).trim()
    } else if (word.startsWith('-') && word !== '-') throw new UsageError(`unknown option ${JSON.stringify(word)}`)
    else positional.push(word)
  }
  const [name, target, ...more] = [...positional, ...(rest ?? [])]
  if (name === undefined) throw new UsageError('add needs a server name, then a command or URL')
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name))
    throw new UsageError(
      `invalid server name ${JSON.stringify(name)}: 1-64 letters, digits, "_", "-" or "." (starting with a letter or digit)`,
    )
  if (target === undefined)
    throw new UsageError(
      transport === 'stdio'
        ? `add ${name} needs the command that starts the server`
        : `add ${name} needs the server's URL`,
    )
  let entry: Record<string, unknown>
  if (transport === 'stdio') {
    if (Object.keys(headers).length)
      throw new UsageError('--header is for http and sse servers (give --transport http)')
    if (/^https?:\/\//.test(target))
      throw new UsageError(`${JSON.stringify(target)} is a URL: give --transport http (or sse) for a remote server`)
    entry = { command: target, args: more, ...(Object.keys(env).length ? { env } : {}) }
  } else {
    if (Object.keys(env).length) throw new UsageError('--env is for stdio servers (a remote server gets --header)')
    if (more.length) throw new UsageError(`a ${transport} server takes one URL, but "${more.join(' ')}" follows it`)
    entry = { type: transport, url: target, ...(Object.keys(headers).length ? { headers } : {}) }
  }
  // The same check the client applies at load; `${VAR}` may be unset in this shell, so any counts as set.
  const anyVariable = new Proxy({} as Record<string, string>, { get: () => 'set' })
  const checked = checkServer(name, entry, { source: scope, origin: scope, cwd: '/', env: anyVariable })
  if ('invalid' in checked) throw new UsageError(`the server "${name}" would be invalid: ${checked.invalid}`)
  return { name, scope, transport, entry }
}

/** `remove NAME [--scope S]` / `get NAME [--json]`: the name and the options. */
export function parseNamed(
  command: string,
  words: readonly string[],
): { name: string; scope?: ConfigScope; json: boolean; profile?: string; patches: string[] } {
  let name: string | undefined
  let scope: ConfigScope | undefined
  let json = false
  let profile: string | undefined
  const patches: string[] = []
  for (let i = 0; i < words.length; i++) {
    const word = words[i]
    const next = () => {
      const v = words[++i]
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${word} needs a value`)
      return v
    }
    if ((word === '--scope' || word === '-s') && command === 'remove') scope = scopeOf(next())
    else if (word === '--json' && command === 'get') json = true
    else if (word === '--profile') profile = next()
    else if (word === '--patch') patches.push(next())
    else if (word.startsWith('-')) throw new UsageError(`unknown option ${JSON.stringify(word)}`)
    else if (name === undefined) name = word
    else
      throw new UsageError(
        `${command} takes one server name, not "${words.filter((w) => !w.startsWith('-')).join(' ')}"`,
      )
  }
  if (name === undefined) throw new UsageError(`${command} needs the name of a server`)
  return { name, json, patches, ...(scope ? { scope } : {}), ...(profile ? { profile } : {}) }
}

/** The project's `.mcp.json` as an object (empty when missing); throws one line when it is not usable. */
export function readMcpJson(dir: string): {
  path: string
  doc: Record<string, unknown>
  servers: Record<string, unknown>
} {
  const path = join(dir, '.mcp.json')
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { path, doc: {}, servers: {} }
    throw new Error(`${path}: cannot read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
  }
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (error) {
    throw new Error(`${path}: not valid JSON (${(error as Error).message}); fix it first, nothing was written`)
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new Error(`${path}: expected an object with "mcpServers"; nothing was written`)
  const servers = (doc as Record<string, unknown>).mcpServers ?? {}
  if (servers === null || typeof servers !== 'object' || Array.isArray(servers))
    throw new Error(`${path}: "mcpServers" is not an object; nothing was written`)
  return { path, doc: doc as Record<string, unknown>, servers: servers as Record<string, unknown> }
}

/** Writes `.mcp.json` whole (two-space JSON, other top-level keys kept), through a rename in its directory. */
export function writeMcpJson(path: string, doc: Record<string, unknown>): void {
  const temp = `${path}.${process.pid}.tmp`
  writeFileSync(temp, `${JSON.stringify(doc, null, 2)}\n`)
  renameSync(temp, path)
}
