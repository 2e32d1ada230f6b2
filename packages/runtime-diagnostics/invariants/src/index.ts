// @dsh/invariants: `ctx.invariants`, a registry of runtime invariant checks over session logs.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { Session } from '@dsh/session'
import type { InvariantContext, InvariantDefinition, InvariantSummary, InvariantViolation } from './types.ts'

export * from './types.ts'
export {
  MODEL_VISIBLE_MEANS_LOGGED,
  checkRequestReconstructable,
  modelVisibleMeansLogged,
  registerModelVisibleMeansLogged,
  type RequestCheckContext,
} from './model-visible.ts'

declare module 'cordis' {
  interface Context {
    invariants: Invariants
  }
}

/** Thrown by `run()` under `failFast` at the first violation. */
export class InvariantError extends Error {
  override name = 'InvariantError'
  constructor(readonly violations: InvariantViolation[]) {
    super(violations.map((v) => `[${v.invariant}] ${v.message}`).join('\n'))
  }
}

export class Invariants extends Service {
  static Config: Schema<Invariants.Config> = Schema.object({
    enabled: Schema.boolean()
      .default(true)
      .description('Run the registered checks; when false, run() returns no violations.'),
    failFast: Schema.boolean()
      .default(false)
      .description('Throw an InvariantError at the first violation instead of collecting them.'),
  })

  // Mutated in place only: inside methods `this` is a per-caller shadow.
  private readonly definitions = new Map<string, InvariantDefinition>()
  private readonly config: Required<Invariants.Config>

  constructor(ctx: Context, config: Invariants.Config = {}) {
    super(ctx, 'invariants')
    this.config = { enabled: config.enabled ?? true, failFast: config.failFast ?? false }
  }

  /** Adds a check; unwinds when the calling plugin unloads. A duplicate id throws. */
  register(definition: InvariantDefinition): () => void {
    const { id } = definition
    if (typeof id !== 'string' || id === '') throw new TypeError('invariant id must be a non-empty string')
    if (typeof definition.check !== 'function') throw new TypeError(`invariant "${id}": check must be a function`)
    if (this.definitions.has(id)) throw new Error(`invariant "${id}" is already registered`)
    const definitions = this.definitions
    const dispose = this.ctx.effect(() => {
      definitions.set(id, definition)
      return () => {
        if (definitions.get(id) === definition) definitions.delete(id)
      }
    }, `invariant: ${id}`)
    return () => void dispose()
  }

  /** Runs every check in registration order over `session`. */
  run(session: Session, context: InvariantContext = {}): InvariantViolation[] {
    if (!this.config.enabled) return []
    const found: InvariantViolation[] = []
    for (const definition of [...this.definitions.values()]) {
      let result: InvariantViolation[] | void
      try {
        result = definition.check(session, context)
      } catch (error) {
        result = [
          {
            invariant: definition.id,
            sessionId: session.id,
            message: `check threw: ${error instanceof Error ? error.message : String(error)}`,
            details: error,
          },
        ]
      }
      for (const violation of result ?? []) {
        found.push(violation)
        if (this.config.failFast) throw new InvariantError([violation])
      }
    }
    return found
  }

  list(): InvariantSummary[] {
    return [...this.definitions.values()].map(({ id, description }) => ({ id, description }))
  }
}

export namespace Invariants {
  export interface Config {
    enabled?: boolean
    failFast?: boolean
  }
}

export const name = '@dsh/invariants'
export default Invariants
