// `ctx.cmdlineArgs`: the application's own command-line arguments (what follows the launcher's
// flags), with a small schema-free parsed view and a schema-driven `parse()` for surfaces.
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { Context, Service } from 'cordis'
import Schema from 'schemastery'

export const name = 'cmdline'

declare module 'cordis' {
  interface Context {
    cmdlineArgs: CmdlineArgs
  }
}

/** The part of the boot record (`ctx.bootInfo`, provided by @dsh/app-boot) this package reads. */
interface BootArgsSource {
  appArgs?: readonly string[]
}

export interface CmdlineConfig {
  args?: string[] | null
}

export type FlagValue = string | true

export interface ParsedView {
  /** Tokens that are not flags, in order; everything after `--` lands here too. */
  positionals: string[]
  /** `--name=value` -> 'value', `--name` / `-n` -> true. Repeated flags keep every value. */
  flags: Record<string, FlagValue[]>
}

/**
 * Parses without knowing which flags take values: `--x=v` has a value, a bare `--x` is true and
 * never swallows the following token. Use `parse()` when the flag set is known.
 */
export function parseView(argv: readonly string[]): ParsedView {
  const positionals: string[] = []
  const flags: Record<string, FlagValue[]> = Object.create(null)
  const add = (k: string, v: FlagValue) => (flags[k] ??= []).push(v)
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]
    if (token === '--') {
      positionals.push(...argv.slice(i + 1))
      break
    }
    if (token.startsWith('--') && token.length > 2) {
      const eq = token.indexOf('=')
      if (eq > 2) add(token.slice(2, eq), token.slice(eq + 1))
      else add(token.slice(2), true)
    } else if (token.startsWith('-') && token.length > 1 && !/^-\d/.test(token)) {
      for (const ch of token.slice(1)) add(ch, true)
    } else {
      positionals.push(token)
    }
  }
  return { positionals, flags }
}

export class CmdlineArgs extends Service {
  static Config: Schema<CmdlineConfig> = Schema.object({
    // A union keeps an absent `args` absent (a bare array schema would default it to []).
    args: Schema.union([Schema.array(String), Schema.const(null)])
      .description('Explicit arguments. Default: the launcher\'s app arguments.'),
  })

  /** The raw app arguments, exactly as given after the launcher flags. */
  readonly argv: readonly string[]
  readonly positionals: readonly string[]
  readonly flags: Readonly<Record<string, readonly FlagValue[]>>

  constructor(ctx: Context, config: CmdlineConfig = {}) {
    super(ctx, 'cmdlineArgs')
    const boot = ctx.get('bootInfo') as BootArgsSource | undefined
    this.argv = Object.freeze([...(config.args ?? boot?.appArgs ?? [])])
    const view = parseView(this.argv)
    this.positionals = view.positionals
    this.flags = view.flags
  }

  /** True when `--name` (or `-n` for a one-letter name) appears in any form. */
  has(name: string): boolean {
    return name in this.flags
  }

  /** The last `--name=value` value; `undefined` when absent or given without `=value`. */
  value(name: string): string | undefined {
    const values = this.flags[name]
    if (!values) return undefined
    for (let i = values.length - 1; i >= 0; i--) {
      const v = values[i]
      if (typeof v === 'string') return v
    }
    return undefined
  }

  /** Schema-driven parse of the app arguments (node:util parseArgs; positionals allowed). */
  parse<T extends ParseArgsConfig['options']>(options: T, strict = true) {
    return parseArgs({ args: [...this.argv], options, allowPositionals: true, strict })
  }
}

export default CmdlineArgs
