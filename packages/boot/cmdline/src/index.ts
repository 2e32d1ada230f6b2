// `ctx.cmdlineArgs`: the application's own command-line arguments (what follows the launcher's
// flags), with a small schema-free parsed view and a schema-driven `parse()` for surfaces.
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { type Context, Service } from 'cordis'
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

/**
 * For flags whose value is optional (`-r [id]`): a flag followed by nothing or by another option
 * (`-x`, `--x`; a lone `-` is a value, as in POSIX) has no value, and so has `--flag=`. Returns
 * argv without those bare flags, and the names of the flags seen bare, so a strict parser can treat
 * the flag as taking a string. Everything after `--` is left alone.
 */
export function splitOptionalValues(
  argv: readonly string[],
  flags: ReadonlyArray<{ long: string; short?: string }>,
): { args: string[]; bare: Set<string> } {
  const args: string[] = []
  const bare = new Set<string>()
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]
    if (token === '--') {
      args.push(...argv.slice(i))
      break
    }
    const next = argv[i + 1]
    const flag = flags.find(
      (f) => token === `--${f.long}` || token === `--${f.long}=` || (f.short !== undefined && token === `-${f.short}`),
    )
    const valueless = next === undefined || (next.startsWith('-') && next !== '-')
    if (flag && (token.endsWith('=') || valueless)) bare.add(flag.long)
    else args.push(token)
  }
  return { args, bare }
}

export class CmdlineArgs extends Service {
  static Config: Schema<CmdlineConfig> = Schema.object({
    // A union keeps an absent `args` absent (a bare array schema would default it to []).
    args: Schema.union([Schema.array(String), Schema.const(null)]).description(
      "Explicit arguments. Default: the launcher's app arguments.",
    ),
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
