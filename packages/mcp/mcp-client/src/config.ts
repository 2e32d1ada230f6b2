// Server specifications in the shape other agents share (`mcpServers: {name: spec}`), from three
// sources: the row's own `servers`, the project's `.mcp.json`, and the `mcpServers` settings
// namespace. Each spec is checked on its own: a bad one becomes an `invalid` server with a
// one-line reason, never an exception that would stop the others or the boot.
import { readFileSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { commandTargets, projectFileDigests, type JsonValue, type TrustItem } from '@dsh/project-trust'
import type { OAuthSettings } from '@dsh/mcp-oauth'

export type { OAuthSettings }

export type McpSource = 'config' | 'project' | 'user' | 'session'
export type McpTransportKind = 'stdio' | 'http' | 'sse'

export interface StdioServerSpec {
  transport: 'stdio'
  command: string
  args: string[]
  env: Record<string, string>
  /** Absolute working directory of the server process. */
  cwd: string
}

export interface RemoteServerSpec {
  transport: 'http' | 'sse'
  url: string
  headers: Record<string, string>
  /** OAuth 2.1 when the server asks for it (a 401); `false`: never (a 401 is a failure). */
  oauth: OAuthSettings | false
}

export type ServerSpec = (StdioServerSpec | RemoteServerSpec) & {
  /** Per-call timeout override (ms). */
  timeoutMs?: number
}

/** One entry of an `mcpServers` table after checking: usable, disabled, or invalid with a reason. */
export type CheckedServer =
  | { name: string; source: McpSource; origin: string; spec: ServerSpec }
  | { name: string; source: McpSource; origin: string; disabled: true }
  | { name: string; source: McpSource; origin: string; invalid: string }

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

class SpecError extends Error {}

/**
 * Expands `${NAME}` and `${NAME:-default}` from `env`. A variable that is unset and has no default
 * is an error naming it (a server started with a literal `${TOKEN}` would fail in a confusing way).
 */
export function expandVariables(text: string, env: Record<string, string | undefined>, where: string): string {
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_, name: string, fallback: string | undefined) => {
      const value = env[name]
      if (value !== undefined && value !== '') return value
      if (fallback !== undefined) return fallback
      throw new SpecError(`${where} uses \${${name}}, which is not set (set it, or write \${${name}:-default})`)
    },
  )
}

function stringList(value: unknown, where: string): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))
    throw new SpecError(`${where} must be a list of strings`)
  return value as string[]
}

function stringMap(value: unknown, where: string): Record<string, string> {
  if (value === undefined) return {}
  if (!isRecord(value)) throw new SpecError(`${where} must be an object of strings`)
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string')
      throw new SpecError(`${where}.${key} must be a string, got ${item === null ? 'null' : typeof item}`)
  }
  return value as Record<string, string>
}

/**
 * Checks one `mcpServers` entry. Accepted shapes: `{command, args?, env?, cwd?, type?: 'stdio'}`,
 * `{url, headers?, type?: 'http' | 'streamable-http' | 'sse'}`; both may carry `disabled: true`
 * and `timeout` (ms). Strings may use `${VAR}` / `${VAR:-default}`.
 */
export function checkServer(
  name: string,
  raw: unknown,
  options: { source: McpSource; origin: string; cwd: string; env: Record<string, string | undefined> },
): CheckedServer {
  const base = { name, source: options.source, origin: options.origin }
  try {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) {
      throw new SpecError(
        'the server name must be 1-64 letters, digits, "_", "-" or "." (starting with a letter or digit)',
      )
    }
    if (!isRecord(raw))
      throw new SpecError(
        `expected an object with "command" or "url", got ${raw === null ? 'null' : Array.isArray(raw) ? 'a list' : typeof raw}`,
      )
    if (raw.disabled === true) return { ...base, disabled: true }
    const expand = (text: string, where: string) => expandVariables(text, options.env, where)
    let timeoutMs: number | undefined
    if (raw.timeout !== undefined) {
      if (typeof raw.timeout !== 'number' || !Number.isFinite(raw.timeout) || raw.timeout <= 0)
        throw new SpecError('"timeout" must be a positive number of milliseconds')
      timeoutMs = raw.timeout
    }
    const type = raw.type
    if (type !== undefined && !['stdio', 'http', 'streamable-http', 'streamableHttp', 'sse'].includes(type as string)) {
      throw new SpecError(`"type" must be stdio, http or sse, not ${JSON.stringify(type)}`)
    }
    const hasCommand = raw.command !== undefined
    const hasUrl = raw.url !== undefined
    if (hasCommand && hasUrl)
      throw new SpecError('give either "command" (a local server) or "url" (a remote one), not both')
    if (hasCommand || type === 'stdio') {
      if (typeof raw.command !== 'string' || raw.command.trim() === '')
        throw new SpecError('"command" must be a non-empty string')
      const env = stringMap(raw.env, '"env"')
      const cwdRaw = raw.cwd === undefined ? options.cwd : raw.cwd
      if (typeof cwdRaw !== 'string' || cwdRaw === '') throw new SpecError('"cwd" must be a non-empty string')
      const cwd = expand(cwdRaw, '"cwd"')
      return {
        ...base,
        spec: {
          transport: 'stdio',
          command: expand(raw.command, '"command"'),
          args: stringList(raw.args, '"args"').map((arg, i) => expand(arg, `"args"[${i}]`)),
          env: Object.fromEntries(Object.entries(env).map(([key, value]) => [key, expand(value, `"env".${key}`)])),
          cwd: isAbsolute(cwd) ? cwd : resolve(options.cwd, cwd),
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        },
      }
    }
    if (hasUrl) {
      if (typeof raw.url !== 'string') throw new SpecError('"url" must be a string')
      const url = expand(raw.url, '"url"')
      let parsed: URL
      try {
        parsed = new URL(url)
      } catch {
        throw new SpecError(`"url" is not a valid URL: ${JSON.stringify(url)}`)
      }
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
        throw new SpecError(`"url" must be http or https, not ${parsed.protocol}`)
      const headers = stringMap(raw.headers, '"headers"')
      const oauth = oauthSettings(raw.oauth, expand)
      return {
        ...base,
        spec: {
          transport: type === 'sse' ? 'sse' : 'http',
          url,
          headers: Object.fromEntries(
            Object.entries(headers).map(([key, value]) => [key, expand(value, `"headers".${key}`)]),
          ),
          oauth,
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        },
      }
    }
    throw new SpecError('expected "command" (a local server) or "url" (a remote one)')
  } catch (error) {
    if (error instanceof SpecError) return { ...base, invalid: error.message }
    throw error
  }
}

const OAUTH_KEYS = [
  'grant',
  'clientId',
  'clientSecret',
  'clientMetadataUrl',
  'scope',
  'callbackPort',
  'privateKey',
  'algorithm',
  'clientName',
  'idpTokenUrl',
  'idToken',
  'idpClientId',
  'idpClientSecret',
]

const GRANTS = ['authorization_code', 'client_credentials', 'cross_app_access'] as const

/** The `oauth` field of a remote entry: absent (OAuth when asked), `false`, or an object of settings. */
function oauthSettings(raw: unknown, expand: (text: string, where: string) => string): OAuthSettings | false {
  if (raw === false) return false
  if (raw === undefined || raw === true) return { grant: 'authorization_code' }
  if (!isRecord(raw))
    throw new SpecError(
      '"oauth" must be false or an object ({clientId, clientSecret, scope, callbackPort, grant, ...})',
    )
  for (const key of Object.keys(raw)) {
    if (!OAUTH_KEYS.includes(key))
      throw new SpecError(`"oauth.${key}" is not a known setting (known: ${OAUTH_KEYS.join(', ')})`)
  }
  const text = (key: string): string | undefined => {
    const value = raw[key]
    if (value === undefined) return undefined
    if (typeof value !== 'string' || value === '') throw new SpecError(`"oauth.${key}" must be a non-empty string`)
    return expand(value, `"oauth.${key}"`)
  }
  const grant = (raw.grant ?? 'authorization_code') as OAuthSettings['grant']
  if (!GRANTS.includes(grant))
    throw new SpecError(
      `"oauth.grant" must be authorization_code, client_credentials or cross_app_access, not ${JSON.stringify(grant)}`,
    )
  const port = raw.callbackPort
  if (port !== undefined && (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535))
    throw new SpecError('"oauth.callbackPort" must be a port number (1-65535)')
  const settings: OAuthSettings = { grant }
  for (const key of [
    'clientId',
    'clientSecret',
    'clientMetadataUrl',
    'scope',
    'privateKey',
    'algorithm',
    'clientName',
    'idpTokenUrl',
    'idToken',
    'idpClientId',
    'idpClientSecret',
  ] as const) {
    const value = text(key)
    if (value !== undefined) settings[key] = value
  }
  if (port !== undefined) settings.callbackPort = port as number
  if (settings.clientMetadataUrl !== undefined) {
    let parsed: URL | undefined
    try {
      parsed = new URL(settings.clientMetadataUrl)
    } catch {}
    if (!parsed || parsed.protocol !== 'https:' || parsed.pathname === '/')
      throw new SpecError('"oauth.clientMetadataUrl" must be an https URL with a path')
  }
  if (grant === 'client_credentials' || grant === 'cross_app_access') {
    if (!settings.clientId) throw new SpecError(`"oauth.grant: ${grant}" needs "oauth.clientId"`)
    if (!settings.clientSecret && !settings.privateKey)
      throw new SpecError(`"oauth.grant: ${grant}" needs "oauth.clientSecret" or "oauth.privateKey"`)
  } else if (settings.privateKey)
    throw new SpecError('"oauth.privateKey" is only used with "oauth.grant: client_credentials" or "cross_app_access"')
  const idpKeys = (['idpTokenUrl', 'idToken', 'idpClientId', 'idpClientSecret'] as const).filter((k) => settings[k])
  if (grant === 'cross_app_access') {
    if (!settings.idpTokenUrl || !settings.idToken)
      throw new SpecError('"oauth.grant: cross_app_access" needs "oauth.idpTokenUrl" and "oauth.idToken"')
    let idp: URL | undefined
    try {
      idp = new URL(settings.idpTokenUrl)
    } catch {}
    const loopback = idp && /^(127\.0\.0\.1|localhost|\[::1\])$/.test(idp.hostname)
    if (!idp || !(idp.protocol === 'https:' || (idp.protocol === 'http:' && loopback)))
      throw new SpecError('"oauth.idpTokenUrl" must be an https URL (http only on a loopback host)')
    if (settings.idpClientSecret && !settings.idpClientId)
      throw new SpecError('"oauth.idpClientSecret" needs "oauth.idpClientId"')
  } else if (idpKeys.length > 0)
    throw new SpecError(`"oauth.${idpKeys[0]}" is only used with "oauth.grant: cross_app_access"`)
  if (settings.clientSecret && !settings.clientId) throw new SpecError('"oauth.clientSecret" needs "oauth.clientId"')
  return settings
}

/** Every entry of an `mcpServers` table; a table that is not an object is one problem string. */
export function checkTable(
  table: unknown,
  options: { source: McpSource; origin: string; cwd: string; env: Record<string, string | undefined> },
): { servers: CheckedServer[]; problem?: string } {
  if (table === undefined || table === null) return { servers: [] }
  if (!isRecord(table)) return { servers: [], problem: `${options.origin}: "mcpServers" must be an object of servers` }
  return { servers: Object.entries(table).map(([name, raw]) => checkServer(name, raw, options)) }
}

/**
 * Reads `<dir>/.mcp.json`. Missing: no servers. Unreadable or malformed: one problem string naming
 * the file (the other sources still load).
 */
export function readProjectFile(dir: string): { table?: unknown; path: string; problem?: string } {
  const path = join(dir, '.mcp.json')
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return { path }
    return { path, problem: `${path}: cannot read (${code ?? String(error)})` }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    return { path, problem: `${path}: not valid JSON (${(error as Error).message})` }
  }
  if (!isRecord(parsed)) return { path, problem: `${path}: expected an object with "mcpServers"` }
  return { path, table: parsed.mcpServers }
}

/** The digests of the project files a raw stdio server entry executes (its program, an interpreter's script). */
export function serverFileDigests(raw: unknown, dir: string): Record<string, string> {
  if (!isRecord(raw) || typeof raw.command !== 'string') return {}
  const args = Array.isArray(raw.args) ? raw.args.map(String) : []
  return projectFileDigests(
    dir,
    commandTargets([raw.command, ...args]),
    typeof raw.cwd === 'string' ? resolve(dir, raw.cwd) : dir,
  )
}

/** A shell-like rendering of one command line, for people (quoting only where needed). */
export function commandLine(words: readonly string[]): string {
  return words
    .map((word) => (/^[A-Za-z0-9_./@%+=:,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`))
    .join(' ')
}

/**
 * What a project `mcpServers` table would run, for `@dsh/project-trust`: every entry that is not
 * `disabled: true`, as written in the file (before `${VAR}` expansion, so the consent does not
 * depend on the environment and no secret is shown), plus the digests of the project's own files
 * its command line executes (the program, an interpreter's script: a trusted `node
 * tools/server.js` stops being trusted when that file changes), with one display line each.
 */
export function projectTrustItems(table: unknown, file: string, dir: string): TrustItem[] {
  if (!isRecord(table)) return []
  const items: TrustItem[] = []
  for (const [name, raw] of Object.entries(table)) {
    if (isRecord(raw) && raw.disabled === true) continue
    let display: string
    const files = serverFileDigests(raw, dir)
    if (isRecord(raw) && typeof raw.command === 'string') {
      const args = Array.isArray(raw.args) ? raw.args.map(String) : []
      const env = isRecord(raw.env) ? Object.entries(raw.env).map(([key, value]) => `${key}=${String(value)}`) : []
      display = [
        commandLine([raw.command, ...args]),
        env.length ? `(env ${commandLine(env)})` : '',
        typeof raw.cwd === 'string' ? `(cwd ${raw.cwd})` : '',
      ]
        .filter(Boolean)
        .join(' ')
    } else if (isRecord(raw) && typeof raw.url === 'string') {
      const headers = isRecord(raw.headers) ? Object.keys(raw.headers) : []
      display = `${raw.url}${headers.length ? ` (headers ${headers.join(', ')})` : ''}`
    } else display = JSON.stringify(raw) ?? String(raw)
    items.push({ file, kind: 'mcp-server', name, display, run: { entry: (raw ?? null) as JsonValue, files } })
  }
  return items
}
