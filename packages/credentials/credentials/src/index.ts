// @dsh/credentials: the `ctx.credentials` seam (Service Definition, no I/O). A credential is a
// named secret (an environment-variable-like name such as `DEEPSEEK_API_KEY`). Consumers read
// values; `describe()` says where a value would come from without revealing it. Providers
// (credentials-local, ...) own the layers and their precedence.
import { type Context, Service } from 'cordis'

declare module 'cordis' {
  interface Context {
    credentials: CredentialsService
  }
}

/** Credential names: a letter or `_` first, then letters, digits or `_`. */
export const CREDENTIAL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

export function checkCredentialName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !CREDENTIAL_NAME.test(name)) {
    throw new CredentialError(
      'INVALID_NAME',
      `invalid credential name ${JSON.stringify(String(name)).slice(0, 80)}: use letters, digits and "_", not starting with a digit`,
    )
  }
}

export type CredentialErrorCode =
  /** No layer holds a value. */
  | 'MISSING_CREDENTIAL'
  /** A credentials file is readable by group or others and was refused. */
  | 'INSECURE_FILE'
  /** A credentials file could not be parsed (the message names the place, never the content). */
  | 'MALFORMED_FILE'
  | 'INVALID_NAME'
  | 'INVALID_VALUE'
  /** The provider (or the layer) cannot store values. */
  | 'READ_ONLY'

/** Every message names credentials and files, never a value. */
export class CredentialError extends Error {
  constructor(
    readonly code: CredentialErrorCode,
    message: string,
    readonly details: { credential?: string; path?: string } = {},
  ) {
    super(message)
    this.name = 'CredentialError'
  }
}

/** The state of one layer for one lookup. */
export type CredentialLayerStatus = 'ok' | 'absent' | 'refused' | 'malformed'

/** One place a credential can be set, in the provider's precedence order. */
export interface CredentialLayer {
  /** Stable id, e.g. `env`, `project-env`, `home-env`, `credentials-file`. */
  id: string
  /** How a person sets a value there, e.g. `the environment (export NAME=...)` or a file path. */
  label: string
  path?: string
  /** Whether `set()` writes to this layer. */
  writable: boolean
  /** `absent`: the file does not exist (or the layer is empty). */
  status: CredentialLayerStatus
  /** Why a layer was refused or unreadable (no values). */
  problem?: string
}

/** Where a credential's value comes from; never the value itself. */
export interface CredentialDescription {
  name: string
  configured: boolean
  /** The layer whose value `get()` returns. */
  source?: CredentialLayer
  /** Lower-precedence layers that also hold a value, hidden by `source`. */
  shadowed: CredentialLayer[]
  /** All layers, highest precedence first. */
  layers: CredentialLayer[]
}

/** The sentence listing where a credential can be set, highest precedence first. */
export function whereToSet(name: string, layers: CredentialLayer[]): string {
  return layers.map((layer) => (layer.id === 'env' ? `export ${name}=... in the environment` : layer.label)).join('; ')
}

export abstract class CredentialsService extends Service {
  constructor(ctx: Context) {
    super(ctx, 'credentials')
  }

  /** The value, or `undefined` when no layer holds one. Throws `CredentialError` for a refused or malformed layer it had to read. */
  abstract get(name: string): Promise<string | undefined>

  /** Where the value would come from, without revealing it. Never throws for a bad layer: its status says so. */
  abstract describe(name: string): Promise<CredentialDescription>

  /** Stores a value in the provider's writable layer. */
  abstract set(name: string, value: string): Promise<void>

  /** Removes the value from the provider's writable layer (other layers are untouched). */
  abstract unset(name: string): Promise<void>

  /**
   * Every secret value this provider currently holds, so that output can be scrubbed of them
   * (e.g. a provider error that echoes a key). Never print or log the result. The default knows
   * none; providers override it.
   */
  async knownValues(): Promise<string[]> {
    return []
  }

  /**
   * The value, or a `CredentialError('MISSING_CREDENTIAL')` whose message names the credential,
   * what it is for (`hint`), and every place it can be set.
   */
  async require(name: string, hint?: string): Promise<string> {
    const value = await this.get(name)
    if (value !== undefined) return value
    const { layers } = await this.describe(name)
    const what = hint ? ` (${hint})` : ''
    throw new CredentialError(
      'MISSING_CREDENTIAL',
      `missing credential ${name}${what}; set it in one of, highest precedence first: ${whereToSet(name, layers)}`,
      { credential: name },
    )
  }
}

export const name = 'credentials'
export default CredentialsService
