// Product identity shared by every surface: the name, the version and the User-Agent string,
// plus the branded-id helper used for opaque ids that cross a boundary.
import { readFileSync } from 'node:fs'

export const PRODUCT_NAME = 'dsh'

/**
 * A nominal type over `T`: `Brand<string, 'SessionId'>` is a string that only code which
 * deliberately brands it can produce, so two kinds of id cannot be swapped by accident.
 */
declare const brandTag: unique symbol
export type Brand<T, B extends string> = T & { readonly [brandTag]: B }

/** Marks a value as a branded id. Validate the value before calling this; it performs no check. */
export function brand<B extends string, T = string>(value: T): Brand<T, B> {
  return value as Brand<T, B>
}

function readVersion(): string {
  // The product version is the CLI package's version; this package sits beside it in the repo.
  for (const rel of ['../../../boot/cli/package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { version?: unknown }
      if (typeof pkg.version === 'string') return pkg.version
    } catch {
      // try the next candidate
    }
  }
  return '0.0.0'
}

export const version: string = readVersion()

/** `dsh/0.1.0 (node v20; linux)`; `extra` is appended as a further product token. */
export function userAgent(extra?: string): string {
  const major = process.versions.node.split('.')[0]
  const base = `${PRODUCT_NAME}/${version} (node v${major}; ${process.platform})`
  return extra ? `${base} ${extra}` : base
}

export { CodedError, type JsonObject, type JsonValue, type StopInfo } from './vocabulary.ts'
