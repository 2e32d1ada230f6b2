// How a boot fails: one BootFailure per row that did not come up, one `dsh: boot failed: ...`
// line each, and the BootError that carries them.
import { DshUserError } from '@dsh/app-compose'

export type BootFailureKind = 'resolve' | 'disabled' | 'import' | 'config' | 'apply' | 'inject' | 'check'

export interface BootFailure {
  id: string
  name: string
  kind: BootFailureKind
  cause: string
}

export const formatFailure = (f: BootFailure) =>
  f.kind === 'check' ? `dsh: ${f.cause}` : `dsh: boot failed: row ${f.id} (${f.name}): ${f.cause}`

/** The tree did not come up; `message` is one `dsh: boot failed: ...` line per reported row. */
export class BootError extends DshUserError {
  override name = 'BootError'
  /** Every failed row, including unmet injects left out of `failures` as fallout of another row. */
  readonly all: BootFailure[]
  constructor(
    readonly failures: BootFailure[],
    all: BootFailure[] = failures,
  ) {
    super(failures.map(formatFailure).join('\n'), 1)
    this.all = all
  }
}

export const firstLine = (error: unknown) => String((error as Error)?.message ?? error).split('\n')[0]

/** `invalid config:\n  - $.port expected number but got x (at port)` -> one line naming each field. */
export function describeConfigError(error: Error): string {
  const issues = error.message
    .split('\n')
    .slice(1)
    .map((line) => {
      const m = /^\s*-\s*(.*?)(?:\s+\(at ([^)]*)\))?$/.exec(line)
      if (!m) return line.trim()
      const message = m[1].replace(/^\$(\.[\w$.[\]-]+)?\s+/, '')
      return m[2] ? `field config.${m[2]}: ${message}` : message
    })
    .filter(Boolean)
  return `invalid config: ${issues.join('; ') || firstLine(error)}`
}
