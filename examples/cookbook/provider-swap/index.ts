// Recipe: a provider swap. Another implementation of the `ctx.shell` seam that runs nothing: it
// answers every command with what it would have run. Put this row in place of the `shell` row
// (`- id: shell` with `name:` this module) and every consumer of ctx.shell (the bash tool, hooks,
// ...) goes dry at once, with no change to any of them.
import { existsSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import {
  ShellError,
  ShellExecutor,
  type ShellLimits,
  type ShellRequest,
  type ShellResult,
  type ShellSpec,
} from '@dsh/shell'

export interface Config {
  /** Text put before the command in every answer. */
  banner: string
}

export default class DryRunShell extends ShellExecutor {
  static Config: Schema<Partial<Config>, Config> = Schema.object({
    banner: Schema.string().default('(dry run) would run:').description('Text put before the command in every answer.'),
  })

  readonly dialect = 'bash'
  readonly limits: ShellLimits = { defaultTimeoutMs: 120_000, maxTimeoutMs: 600_000 }
  /** Every command this executor was asked to run, in order (for inspection). */
  readonly seen: string[] = []

  constructor(
    ctx: Context,
    readonly config: Config,
  ) {
    super(ctx)
  }

  // Defaulting is explicit and visible: the caps land in the spec, not deep inside run().
  async resolve(request: ShellRequest): Promise<ShellSpec> {
    if (!request.command.trim())
      throw new ShellError('INVALID_REQUEST', 'The command is empty; pass the shell command to run.')
    const cwd = resolve(request.cwd, request.workdir ?? '.')
    if (!existsSync(cwd)) throw new ShellError('WORKDIR_NOT_FOUND', `The working directory ${cwd} does not exist.`)
    if (!statSync(cwd).isDirectory()) throw new ShellError('WORKDIR_NOT_DIRECTORY', `${cwd} is not a directory.`)
    const timeoutMs = Math.min(request.timeoutMs ?? this.limits.defaultTimeoutMs, this.limits.maxTimeoutMs)
    return {
      executor: 'dry-run',
      dialect: this.dialect,
      command: request.command,
      cwd,
      timeoutMs,
      output: request.output ?? { maxBytes: 30_000, headBytes: 15_000, tailBytes: 15_000 },
      env: request.env ?? {},
      notes: ['this shell is a dry run: nothing was executed'],
    }
  }

  async run(spec: ShellSpec): Promise<ShellResult> {
    if (spec.executor !== 'dry-run')
      throw new ShellError(
        'FOREIGN_SPEC',
        `This spec was resolved by ${spec.executor}; resolve it with this executor first.`,
      )
    this.seen.push(spec.command)
    const text = `${this.config.banner} ${spec.command} (in ${spec.cwd})\n`
    const bytes = Buffer.byteLength(text)
    return {
      status: 'exited',
      exitCode: 0,
      signal: null,
      durationMs: 0,
      output: { head: text, tail: '', totalBytes: bytes, truncated: false, omittedBytes: 0 },
    }
  }
}
