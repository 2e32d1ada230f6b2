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
import { CREDENTIAL_NAME, CredentialError, type CredentialLayer } from '@dsh/credentials'
import { findEnvSyntaxError, HOME_ENV_FORBIDDEN } from '@dsh/home-paths'
import { didYouMean, editDistance } from '@dsh/settings'

export type LayerRead =
  /** `problems`: entries the start check refuses (a name that is no credential name or looks mistyped). */
  | { status: 'ok'; values: Map<string, string | CredentialError>; problems?: CredentialError[] }
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
export function parseCredentialsFile(
  path: string,
  text: string,
): { doc: Document; error?: CredentialError; lineOf: (offset: number | undefined) => number | undefined } {
  const lineCounter = new (yaml().LineCounter)()
  const doc = yaml().parseDocument(text, { schema: 'failsafe', uniqueKeys: true, prettyErrors: true, lineCounter })
  const lineOf = (offset: number | undefined) => (offset === undefined ? undefined : lineCounter.linePos(offset).line)
  const first = doc.errors[0]
  if (first) {
    // The parser's own message can quote file content (a secret); report only its place and code.
    const pos = first.linePos?.[0]
    const where = pos ? `${path}:${pos.line}:${pos.col}` : path
    return {
      doc,
      lineOf,
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
      lineOf,
      error: new CredentialError(
        'MALFORMED_FILE',
        `${path}: malformed credentials file: the top level must be a mapping of NAME: value`,
        { path },
      ),
    }
  }
  return { doc, lineOf }
}

/**
 * The known name an entry's name most likely misspells, when it is not itself known: a case slip
 * or one edit away (`DEEPSEEK_APIKEY`), or a known name with a word left out (`ANTHROPIC_KEY` for
 * `ANTHROPIC_API_KEY`). A name that only shares the provider's word but says something else
 * (`DEEPSEEK_BASE_URL`, `OPENAI_ORG_ID`) or is unlike every known one (another plugin's token) is
 * not flagged: refusing to start over a legitimate entry costs more than missing a typo, which the
 * missing-credential error names anyway.
 */
export function mistypedCredentialName(name: string, known: ReadonlySet<string>): string | undefined {
  if (known.has(name)) return undefined
  const words = (n: string) => n.toUpperCase().split('_').filter(Boolean)
  const first = (n: string) => words(n)[0] ?? ''
  const dropsAWord = (k: string) => {
    const all = new Set(words(k))
    return words(name).length < all.size && words(name).every((w) => all.has(w))
  }
  const sameWord = [...known].filter(
    (k) => first(name) !== '' && first(k) === first(name) && (dropsAWord(k) || editDistance(name, k) <= 1),
  )
  if (sameWord.length)
    return sameWord.reduce((best, k) => (editDistance(name, k) < editDistance(name, best) ? k : best))
  const guess = didYouMean(name, known)
  return guess && editDistance(name, guess) <= 1 ? guess : undefined
}

/** What a YAML node is, in words, for an error that must not quote the value. */
function kindOf(node: unknown): string {
  if (yaml().isMap(node)) return 'a mapping'
  if (yaml().isSeq(node)) return 'a list'
  if (yaml().isAlias(node)) return 'an alias'
  return 'a non-scalar value'
}

/**
 * `$DSH_HOME/.credentials.yaml`: a flat YAML mapping, accepted only with mode 0600 (or stricter).
 * `known`: the credential names dsh knows; an entry that is not a credential name, or that looks
 * like a misspelling of a known one, is a start-check problem (`problems`), named by line.
 */
export function credentialsFileLayer(path: string, known: ReadonlySet<string> = new Set()): Layer {
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
      const { doc, error, lineOf } = parseCredentialsFile(path, text)
      if (error) return { status: 'malformed', error }
      const values = new Map<string, string | CredentialError>()
      const problems: CredentialError[] = []
      if (yaml().isMap(doc.contents)) {
        for (const pair of doc.contents.items) {
          const key = yaml().isScalar(pair.key) ? String(pair.key.value) : undefined
          if (key === undefined) continue
          const line = lineOf((pair.key as { range?: [number] } | null)?.range?.[0])
          const at = `${path}${line ? `:${line}` : ''}`
          if (!CREDENTIAL_NAME.test(key)) {
            // `didYouMean` never offers the word itself, so a name that only needs its invalid
            // characters turned into "_" (`AB-CD-EF-GH-KEY`) is matched exactly first.
            const underscored = key.replace(/[^A-Za-z0-9_]/g, '_')
            const guess = known.has(underscored)
              ? underscored
              : (didYouMean(underscored, known) ?? didYouMean(key, known))
            problems.push(
              new CredentialError(
                'MALFORMED_FILE',
                `${at}: ${JSON.stringify(key).slice(0, 80)} is not a credential name (valid: letters, digits and "_", not starting with a digit${guess ? `; did you mean "${guess}"?` : ''})`,
                { path },
              ),
            )
          } else {
            const guess = mistypedCredentialName(key, known)
            if (guess)
              problems.push(
                new CredentialError(
                  'MALFORMED_FILE',
                  `${at}: ${key}: unknown credential name (did you mean "${guess}"?); if it is another plugin's credential, add it to the credentials row's config.knownNames`,
                  { path, credential: key },
                ),
              )
          }
          if (yaml().isScalar(pair.value)) {
            const value = String(pair.value.value ?? '')
            if (/[\u0000-\u001f\u007f]/.test(value)) {
              const valueLine = lineOf(pair.value.range?.[0]) ?? line
              values.set(
                key,
                new CredentialError(
                  'MALFORMED_FILE',
                  `${path}${valueLine ? `:${valueLine}` : ''}: ${key}: the value holds a line break or control character (valid: one line of text, as in NAME: value)`,
                  { path, credential: key },
                ),
              )
            } else if (present(value)) values.set(key, value)
          } else if (pair.value !== null) {
            values.set(
              key,
              new CredentialError(
                'MALFORMED_FILE',
                `${at}: ${key}: the value is ${kindOf(pair.value)} (valid: a plain string, as in ${key}: value)`,
                { path, credential: key },
              ),
            )
          }
        }
      }
      return { status: 'ok', values, problems }
    },
  }
}
