// Validation of request params at the wire boundary. Each check throws INVALID_PARAMS naming the
// method and the field, so a client can fix its call from the message alone.
import { isAbsolute } from 'node:path'
import { statSync } from 'node:fs'
import { RpcError, type ApprovalDecision } from '@dsh/sdk-protocol'

export type Params = Record<string, unknown>

export function object(method: string, params: unknown, optional = false): Params {
  if (params === undefined && optional) return {}
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw new RpcError('INVALID_PARAMS', `${method}: params must be an object`)
  }
  return params as Params
}

export function string(method: string, params: Params, field: string): string
export function string(method: string, params: Params, field: string, optional: true): string | undefined
export function string(method: string, params: Params, field: string, optional = false): string | undefined {
  const value = params[field]
  if (value === undefined && optional) return undefined
  if (typeof value !== 'string' || value === '') {
    throw new RpcError('INVALID_PARAMS', `${method}: ${field} must be a non-empty string`, { field })
  }
  return value
}

export function seq(method: string, params: Params, field: string, min: number): number | undefined {
  const value = params[field]
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new RpcError('INVALID_PARAMS', `${method}: ${field} must be an integer >= ${min}`, { field })
  }
  return value
}

export function directory(method: string, params: Params, field: string): string {
  const value = string(method, params, field)
  if (!isAbsolute(value))
    throw new RpcError('INVALID_PARAMS', `${method}: ${field} must be an absolute path, not ${JSON.stringify(value)}`, {
      field,
    })
  let isDir = false
  try {
    isDir = statSync(value).isDirectory()
  } catch {
    // reported below
  }
  if (!isDir)
    throw new RpcError('INVALID_PARAMS', `${method}: ${field} ${JSON.stringify(value)} is not an existing directory`, {
      field,
    })
  return value
}

const DECISIONS: readonly ApprovalDecision[] = ['allowed-once', 'allowed-always', 'rejected']

export function decision(method: string, params: Params): ApprovalDecision {
  const value = params.decision
  if (typeof value !== 'string' || !DECISIONS.includes(value as ApprovalDecision)) {
    throw new RpcError('INVALID_PARAMS', `${method}: decision must be one of ${DECISIONS.join(', ')}`, {
      field: 'decision',
    })
  }
  return value as ApprovalDecision
}
