import type { Session } from '@dsh/session'

export interface InvariantViolation {
  /** Id of the invariant that failed. */
  invariant: string
  /** One sentence saying what is wrong. */
  message: string
  sessionId?: string
  /** Log position the violation refers to. */
  seq?: number
  /** JSON-style path of the first differing value, when there is one. */
  path?: string
  details?: unknown
}

/** Free-form facts a check may need (e.g. `{ request, atSeq }` for request checks). */
export interface InvariantContext {
  [key: string]: unknown
}

export interface InvariantDefinition {
  /** Unique; namespace it with the owning package name (e.g. `@dsh/tools:result-per-call`). */
  id: string
  description: string
  /** Returns the violations found (or nothing). A check that throws is reported as a violation. */
  check(session: Session, context: InvariantContext): InvariantViolation[] | void
}

export interface InvariantSummary {
  id: string
  description: string
}

/**
 * The registration surface helpers need; satisfied by `ctx.invariants`. Not a shadow of a service
 * in another package: `Invariants` is this package's own class (index.ts), and a helper taking
 * `Pick<Invariants, 'register'>` would make this file and model-visible.ts import index.ts, which
 * imports them (a file cycle). The narrow interface is the declared contract of the helpers.
 */
export interface InvariantsLike {
  register(definition: InvariantDefinition): () => void
}
