// @dsh/anonymous-user-id: one random UUID per $DSH_HOME, created on first use and reset by
// deleting the file. It identifies an installation to telemetry without identifying a person.
import { randomUUID } from 'node:crypto'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { resolveDshHome } from '@dsh/home-paths'

declare module 'cordis' {
  interface Context {
    anonymousUserId: AnonymousUserId
  }
}

export const FILE_NAME = '.anonymous-user-id'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

export interface Config {
  /** Directory holding the file; default $DSH_HOME. */
  home?: string
}

export interface ReadResult {
  id: string
  /** `created`: this call wrote the file; `read`: it existed; `replaced`: its content was not a UUID. */
  origin: 'created' | 'read' | 'replaced'
}

/**
 * Returns the id stored at `file`, creating it (exclusively, so two processes racing agree on one
 * id) when missing, and replacing content that is not a lower-case UUID.
 */
export function readOrCreate(file: string): ReadResult {
  const existing = tryRead(file)
  if (existing !== undefined && UUID.test(existing)) return { id: existing, origin: 'read' }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  if (existing !== undefined) rmSync(file, { force: true })
  const id = randomUUID()
  try {
    writeFileSync(file, id + '\n', { flag: 'wx', mode: 0o600 })
    return { id, origin: existing === undefined ? 'created' : 'replaced' }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    // Another process created it first: its id wins.
    const theirs = tryRead(file)
    if (theirs !== undefined && UUID.test(theirs)) return { id: theirs, origin: 'read' }
    throw new Error(`${file} holds no valid id and could not be replaced; delete it to reset`)
  }
}

function tryRead(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

export class AnonymousUserId extends Service {
  static Config: Schema<Config> = Schema.object({
    home: Schema.string().description('Directory holding .anonymous-user-id (default: $DSH_HOME).'),
  })
  readonly file: string
  private cached: string | undefined

  constructor(ctx: Context, config: Config = {}) {
    super(ctx, 'anonymousUserId')
    this.file = join(config.home ?? resolveDshHome(), FILE_NAME)
  }

  /** The id, created on first use (not at load: a deployment that never asks writes nothing). */
  get(): string {
    if (this.cached && tryRead(this.file) === this.cached) return this.cached
    const result = readOrCreate(this.file)
    if (result.origin === 'replaced')
      this.ctx.logger('anonymous-user-id').warn('%s did not hold a UUID; a new id was created', this.file)
    this.cached = result.id
    return result.id
  }
}

export const name = 'anonymous-user-id'
export default AnonymousUserId
