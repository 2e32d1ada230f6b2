// The typed RPC contract core: a method is a name plus schemastery schemas for its params and
// result, so one object gives the runtime check (host) and the inferred TypeScript types (client).
// Browser-safe: no node imports.
import type Schema from 'schemastery'

export interface MethodContract<P = unknown, R = unknown> {
  readonly name: string
  readonly params: Schema<P>
  readonly result: Schema<R>
  /** Refused (FORBIDDEN) to callers whose socket peer is not loopback. */
  readonly loopbackOnly?: boolean
  readonly description?: string
}

/** Params type of a contract (what the caller sends). */
export type ParamsOf<C> = C extends MethodContract<infer P, any> ? P : never
/** Result type of a contract (what the host answers). */
export type ResultOf<C> = C extends MethodContract<any, infer R> ? R : never

const METHOD_NAME = /^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)+$/

/** Declares one method. Names are dotted lower-camel words (`sessions.list`). */
export function defineMethod<P, R>(
  name: string,
  spec: { params: Schema<P>; result: Schema<R>; loopbackOnly?: boolean; description?: string },
): MethodContract<P, R> {
  if (!METHOD_NAME.test(name))
    throw new TypeError(
      `defineMethod: bad method name ${JSON.stringify(name)} (expected dotted lower-camel words such as "sessions.list")`,
    )
  return Object.freeze({ name, ...spec })
}

/** The error body every carrier answers with: `{error: {code, message, field?}}`. */
export interface ErrorBody {
  error: { code: string; message: string; field?: string }
}

/** Stable error codes of the gateway and the session methods (domain packages add their own). */
export type ApiErrorCode =
  | 'UNKNOWN_METHOD'
  | 'INVALID_PARAMS'
  | 'INVALID_JSON'
  | 'PAYLOAD_TOO_LARGE'
  | 'FORBIDDEN'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_ARCHIVED'
  | 'SESSION_LOCKED'
  | 'MODEL_NOT_FOUND'
  | 'WORKSPACE_NOT_FOUND'
  | 'NOT_A_DIRECTORY'
  | 'REQUEST_NOT_FOUND'
  | 'UNAVAILABLE'
  | 'INTERNAL'
  | (string & {})

const DEFAULT_STATUS: Record<string, number> = {
  UNKNOWN_METHOD: 404,
  INVALID_PARAMS: 400,
  INVALID_JSON: 400,
  PAYLOAD_TOO_LARGE: 413,
  FORBIDDEN: 403,
  SESSION_NOT_FOUND: 404,
  WORKSPACE_NOT_FOUND: 404,
  REQUEST_NOT_FOUND: 404,
  MODEL_NOT_FOUND: 400,
  NOT_A_DIRECTORY: 400,
  SESSION_ARCHIVED: 409,
  SESSION_LOCKED: 409,
  UNAVAILABLE: 503,
  INTERNAL: 500,
}

/** An error a handler throws to answer with a specific code (and HTTP status, field). */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly status: number
  readonly field?: string
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    options: { status?: number; field?: string } = {},
  ) {
    super(message)
    this.status = options.status ?? DEFAULT_STATUS[code] ?? 400
    if (options.field !== undefined) this.field = options.field
  }

  toBody(): ErrorBody {
    return {
      error: { code: this.code, message: this.message, ...(this.field !== undefined ? { field: this.field } : {}) },
    }
  }
}

/**
 * Validates params against a contract; a failure is `ApiError('INVALID_PARAMS')` naming the
 * method and the field (`sessions.prompt: text: missing required value`).
 */
export function checkParams<P>(contract: MethodContract<P, any>, raw: unknown): P {
  try {
    return contract.params((raw === undefined || raw === null ? {} : raw) as P)
  } catch (error) {
    const message = (error as Error).message ?? String(error)
    const match = /^\$\.([A-Za-z0-9_.[\]]+) (.*)$/s.exec(message)
    if (match) throw new ApiError('INVALID_PARAMS', `${contract.name}: ${match[1]}: ${match[2]}`, { field: match[1] })
    throw new ApiError('INVALID_PARAMS', `${contract.name}: params ${message}`)
  }
}
