// The four local layers. Readers return names and values to the provider only; every message
// they build names files, lines and credential names, never a value or file content.
import { readFile, stat } from 'node:fs/promises'
import { parseEnv } from 'node:util'
import { createRequire } from 'node:module'
import type { Document } from 'yaml'
import type * as Yaml from 'yaml'

// Loaded on first use: a home without this file never pays for loading the YAML parser.
let yamlModule: typeof Yaml | undefined
const yaml = (): typeof Yaml => (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml)
import { CredentialError, type CredentialLayer } from '@dsh/credentials'
import { findEnvSyntaxError, HOME_ENV_FORBIDDEN } from '@dsh/home-paths'

export type LayerRead =
  | { status: 'ok'; values: Map<string, string | CredentialError> }
  | { status: 'absent' }
  | { status: 'refused' | 'malformed'; error: CredentialError }

export interface Layer {
  info: Omit<CredentialLayer, 'status' | 'problem'>
  read(): Promise<LayerRead>
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code
}

/** A blank value is treated as unset in every layer: an empty key is never a usable credential. */
function present(value: string | undefined): value is string {
  return value !== undefined && value !== ''
}

export function envLayer(env: NodeJS.ProcessEnv): Layer {
  return {
    info: { id: 'env', label: 'the environment', writable: false },
    async read() {
      const values = new Map<string, string>()
      for (const [key, value] of Object.entries(env)) if (present(value)) values.set(key, value)
      return { status: 'ok', values }
    },
  }
}

async function readOrAbsent(path: string, _id: string): Promise<string | LayerRead> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    const code = errno(error)
    if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'absent' }
    return {
      status: 'refused',
      error: new CredentialError('MALFORMED_FILE', `cannot read ${path} (${code ?? 'error'})`, { path }),
    }
  }
}

/**
 * A dotenv file parsed with Node's own `util.parseEnv`, after a line check (a line that is not
 * `NAME=value` makes the layer malformed). With `allow`, only those names are read (the project
 * `.env`, which a confined command can write, supplies credentials only).
 */
export function dotenvLayer(
  id: 'project-env' | 'home-env',
  path: string,
  label: string,
  allow?: ReadonlySet<string>,
): Layer {
  return {
    info: { id, label, path, writable: false },
    async read() {
      const text = await readOrAbsent(path, id)
      if (typeof text !== 'string') return text
      const bad = findEnvSyntaxError(text)
      if (bad)
        return {
          status: 'malformed',
          error: new CredentialError('MALFORMED_FILE', `${path}:${bad.line}: malformed .env file: ${bad.problem}`, {
            path,
          }),
        }
      const values = new Map<string, string>()
      for (const [key, value] of Object.entries(parseEnv(text))) {
        if (allow && !allow.has(key)) continue
        if (id === 'home-env' && HOME_ENV_FORBIDDEN.includes(key)) continue
        if (present(value)) values.set(key, value)
      }
      return { status: 'ok', values }
    },
  }
}

/** Group or world permission bits: any of them makes a secret file unacceptable. */
const OPEN_BITS = 0o077

export function insecureMessage(path: string, mode: number): string {
  return `refusing to read ${path}: its mode is ${(mode & 0o777).toString(8).padStart(4, '0')}, readable beyond its owner; run: chmod 600 ${path}`
}

/** Parses the credentials file text; scalars stay strings (failsafe schema: `0123` is not a number). */
export function parseCredentialsFile(path: string, text: string): { doc: Document; error?: CredentialError } {
  const doc = yaml().parseDocument(text, { schema: 'failsafe', uniqueKeys: true, prettyErrors: true })
  const first = doc.errors[0]
  if (first) {
    // The parser's own message can quote file content (a secret); report only its place and code.
    const pos = first.linePos?.[0]
    const where = pos ? `${path}:${pos.line}:${pos.col}` : path
    return {
      doc,
      error: new CredentialError(
        'MALFORMED_FILE',
        `${where}: malformed credentials file (${first.code}); expected lines of NAME: value`,
        { path },
      ),
    }
  }
  if (doc.contents !== null && !yaml().isMap(doc.contents)) {
    return {
      doc,
      error: new CredentialError(
        'MALFORMED_FILE',
        `${path}: malformed credentials file: the top level must be a mapping of NAME: value`,
        { path },
      ),
    }
  }
  return { doc }
}

/** `$DSH_HOME/.credentials.yaml`: a flat YAML mapping, accepted only with mode 0600 (or stricter). */
export function credentialsFileLayer(path: string): Layer {
  return {
    info: { id: 'credentials-file', label: `${path} (mode 0600)`, path, writable: true },
    async read() {
      let mode: number
      try {
        mode = (await stat(path)).mode
      } catch (error) {
        const code = errno(error)
        if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'absent' }
        return {
          status: 'refused',
          error: new CredentialError('MALFORMED_FILE', `cannot read ${path} (${code ?? 'error'})`, { path }),
        }
      }
      if (mode & OPEN_BITS)
        return { status: 'refused', error: new CredentialError('INSECURE_FILE', insecureMessage(path, mode), { path }) }
      const text = await readOrAbsent(path, 'credentials-file')
      if (typeof text !== 'string') return text
      const { doc, error } = parseCredentialsFile(path, text)
      if (error) return { status: 'malformed', error }
      const values = new Map<string, string | CredentialError>()
      if (yaml().isMap(doc.contents)) {
        for (const pair of doc.contents.items) {
          const key = yaml().isScalar(pair.key) ? String(pair.key.value) : undefined
          if (key === undefined) continue
          if (yaml().isScalar(pair.value)) {
            const value = String(pair.value.value ?? '')
            if (present(value)) values.set(key, value)
          } else if (pair.value !== null) {
            values.set(
              key,
              new CredentialError('MALFORMED_FILE', `${path}: ${key} must be a plain string value`, {
                path,
                credential: key,
              }),
            )
          }
        }
      }
      return { status: 'ok', values }
    },
  }
}
