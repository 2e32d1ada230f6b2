// @dsh/system-prompt: the system prompt assembly registry (`ctx.systemPrompt`).
//
// Layout of an assembled prompt, parts separated by one blank line:
//   identity -> stable sections (by order, then id) -> persona -> volatile sections (by order, then id)
// Stable text comes first so a provider's prompt-prefix cache survives changes in volatile parts.
import { statSync } from 'node:fs'
import { arch, release, type as osType } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { ScopedRegistry, standingScope } from '@dsh/scope'
import type { ToolSchema } from '@dsh/llm'
import { VARIABLE_NAME_PATTERN, placeholders, render, tidy } from './template.ts'
import { plainService } from '@dsh/plain-service'

export { VARIABLE_NAME_PATTERN } from './template.ts'

export interface PromptSection {
  /** Unique per scope; a scoped section shadows the global section with the same id. */
  id: string
  /** Ascending; ties break by id. */
  order: number
  /** May contain `{{variable}}` placeholders; every one must be known at registration. */
  text: string
  /** Stable sections precede the persona; volatile ones (`false`) follow it. Default true. */
  stable?: boolean
  /** Agent scope the section belongs to; absent: global. */
  scope?: string
  /**
   * The tools this section is guidance for: it is left out of a prompt whose `deferredTools`
   * include every one of them (the model sees those tools only as catalogue lines until it loads
   * them). Absent: always included.
   */
  tools?: readonly string[]
}

/**
 * The session a prompt is assembled for, structurally (no dependency on `@dsh/session`): the
 * first event's time fixes `{{date}}`, and the object itself keys the per-session facts.
 */
export interface PromptSession {
  readonly events: readonly { readonly time: number }[]
}

export interface AssembleInput {
  provider: string
  model: string
  cwd: string
  scope?: string
  /** Tool schemas to present (normally `ctx.tools.schemas(scope)`); returned sorted by name. */
  tools?: ToolSchema[]
  /**
   * Overrides the `{{date}}` variable (YYYY-MM-DD). Default: the local date of the session's first
   * event when `session` is given, else today.
   */
  date?: string
  /** The session being prompted: pins `{{date}}` and `{{git}}` for the session's life. */
  session?: PromptSession
  /**
   * Tools held back from this request (normally `ctx.tools.deferred(scope)`): a section whose
   * `tools` are all among them is left out.
   */
  deferredTools?: readonly string[]
}

export interface AssembledPrompt {
  system: string
  tools: ToolSchema[]
}

export type VariableResolver = (input: AssembleInput) => string

export interface SystemPromptConfig {
  identity: string
  persona: string
  variables?: Record<string, string>
  /** Per section id: `false` drops the section, a string replaces its text. */
  sections?: Record<string, string | false>
}

/** A section or persona refers to a variable that does not exist, or a variable failed to resolve. */
export class SystemPromptError extends Error {
  override name = 'SystemPromptError'
}

export const DEFAULT_IDENTITY =
  "You are dsh, a coding agent running inside the dsh harness. You work in the user's project " +
  'through the tools you are given: read before you change things, make the smallest change that ' +
  'solves the task, check your work when you can, and report plainly what you did and what is left.'

export const BUILTIN_VARIABLES = ['model', 'provider', 'cwd', 'date', 'os', 'shell', 'git'] as const

/** Facts sampled once per session object and kept for its life in this process. */
const gitBySession = new WeakMap<PromptSession, string>()

const builtins: Record<(typeof BUILTIN_VARIABLES)[number], VariableResolver> = {
  model: (input) => input.model,
  provider: (input) => input.provider,
  cwd: (input) => input.cwd,
  date: (input) => input.date ?? localDate(new Date(input.session?.events[0]?.time ?? Date.now())),
  os: () => `${osType()} ${release()} (${arch()})`,
  shell: () => userShell(),
  git: (input) => {
    const session = input.session
    if (!session) return gitRepository(input.cwd) ? 'yes' : 'no'
    let value = gitBySession.get(session)
    if (value === undefined) gitBySession.set(session, (value = gitRepository(input.cwd) ? 'yes' : 'no'))
    return value
  },
}

/**
 * The sections this service contributes itself. Ids start with `dsh:`; each one can be replaced or
 * dropped through the `sections` config like any other section.
 */
export const BUILTIN_SECTIONS: readonly ResolvedSection[] = [
  {
    id: 'dsh:working',
    order: 100,
    stable: true,
    text: [
      'Working rules:',
      '- Paths in tool calls may be relative to the working directory; prefer that over absolute paths.',
      '- Prefer a dedicated tool over a shell command when one exists for the job (reading, searching, editing files).',
      '- Look before you change: read the part of a file you are about to edit, and edit only what the task needs.',
      '- Calls that do not depend on each other can go in the same response.',
      '- Long tool output is cut to its beginning and end around a `[... N bytes omitted ...]` marker; when the full text was saved, the marker or a note beside it names the file. Search or page through that file instead of rerunning the command.',
      '- A tool error explains what went wrong; fix the call rather than retrying it unchanged.',
    ].join('\n'),
  },
  {
    id: 'dsh:environment',
    order: 900,
    stable: true,
    text: [
      'Environment:',
      '- Working directory: {{cwd}}',
      '- Git repository: {{git}}',
      '- Platform: {{os}}',
      '- User shell: {{shell}}',
    ].join('\n'),
  },
  {
    id: 'dsh:date',
    order: 900,
    stable: false,
    text: 'Session date: {{date}} (the day this session started).',
  },
]

/** A registered section as stored: `stable` resolved to a boolean. */
export interface ResolvedSection {
  id: string
  order: number
  text: string
  stable: boolean
  scope?: string
  tools?: readonly string[]
}
type SectionEntry = ResolvedSection

interface PersonaEntry {
  text: string
  /** The persona is the whole prompt for its scope: no identity, no sections. */
  owns: boolean
}

export interface PersonaOptions {
  /** The persona replaces the whole system prompt (identity and every section) for its scope. */
  owns?: boolean
}

declare module 'cordis' {
  interface Context {
    systemPrompt: SystemPrompt
  }
}

/**
 * For plugins that contribute a section but do not need a system prompt to work (a tool's
 * guidance): registers `section` whenever `ctx.systemPrompt` is available, removes it when that
 * service or the calling plugin goes; a no-op without one.
 */
export function contributeSection(ctx: Context, section: PromptSection): void {
  ctx.inject(['systemPrompt'], (inner) => {
    inner.systemPrompt.registerSection(section)
  })
}

export class SystemPrompt extends Service {
  static Config: Schema<SystemPromptConfig> = Schema.object({
    identity: Schema.string()
      .default(DEFAULT_IDENTITY)
      .description('The harness identity: always the first part of the prompt.'),
    persona: Schema.string().default('').description('The deployment persona, placed after the stable sections.'),
    variables: Schema.dict(Schema.string()).default({}).description('Static `{{name}}` variables.'),
    sections: Schema.dict(Schema.union([Schema.const(false), Schema.string()]))
      .default({})
      .description('Per section id: false drops the section, a string replaces its text.'),
  })

  readonly identity: string
  private readonly variablesTable = new Map<string, VariableResolver>()
  private readonly sectionsTable = new ScopedRegistry<SectionEntry>({
    key: (section) => section.id,
    label: 'prompt section',
  })
  private readonly personas = new ScopedRegistry<PersonaEntry>({ key: () => 'persona', label: 'persona' })
  private readonly defaultPersona: string
  private readonly overrides: ReadonlyMap<string, string | false>

  constructor(ctx: Context, config: SystemPromptConfig) {
    super(ctx, 'systemPrompt')
    for (const name of BUILTIN_VARIABLES) this.variablesTable.set(name, builtins[name])
    for (const [name, value] of Object.entries(config.variables ?? {})) {
      checkVariableName(name, 'config.variables')
      if (this.variablesTable.has(name))
        throw new SystemPromptError(`config.variables: "${name}" is a built-in variable and cannot be redefined`)
      this.variablesTable.set(name, () => value)
    }
    this.checkText('config.identity', config.identity)
    this.checkText('config.persona', config.persona)
    this.identity = config.identity
    this.defaultPersona = config.persona
    const overrides = new Map<string, string | false>()
    for (const [id, value] of Object.entries(config.sections ?? {})) {
      if (value !== false && typeof value !== 'string')
        throw new TypeError(`config.sections["${id}"]: expected false or a string`)
      if (typeof value === 'string') this.checkText(`config.sections["${id}"]`, value)
      overrides.set(id, value)
    }
    this.overrides = overrides
    for (const section of BUILTIN_SECTIONS) this.sectionsTable.register({ ...section }, {})
  }

  /**
   * Adds a section. Throws on a bad shape, a duplicate id in the same scope, or a placeholder naming
   * an unknown variable. Undone by the disposer or when the calling plugin unloads.
   */
  registerSection(section: PromptSection): () => void {
    if (section === null || typeof section !== 'object')
      throw new TypeError('systemPrompt.registerSection: expected a section object')
    const { id, order, text } = section
    // A section that names no scope goes into the caller's standing scope (a preset row's mount).
    const scope = section.scope ?? standingScope(this.ctx)
    if (typeof id !== 'string' || id === '')
      throw new TypeError('systemPrompt.registerSection: id must be a non-empty string')
    if (typeof order !== 'number' || !Number.isFinite(order))
      throw new TypeError(`prompt section "${id}": order must be a finite number`)
    if (typeof text !== 'string') throw new TypeError(`prompt section "${id}": text must be a string`)
    if (section.stable !== undefined && typeof section.stable !== 'boolean')
      throw new TypeError(`prompt section "${id}": stable must be a boolean`)
    if (scope !== undefined && (typeof scope !== 'string' || scope === ''))
      throw new TypeError(`prompt section "${id}": scope must be a non-empty string when given`)
    const tools = section.tools
    if (
      tools !== undefined &&
      (!Array.isArray(tools) || tools.length === 0 || tools.some((t) => typeof t !== 'string' || t === ''))
    )
      throw new TypeError(`prompt section "${id}": tools must be a non-empty array of tool names when given`)
    this.checkText(`prompt section "${id}"`, text)
    const entry: SectionEntry = {
      id,
      order,
      text,
      stable: section.stable ?? true,
      ...(scope !== undefined ? { scope } : {}),
      ...(tools !== undefined ? { tools: [...tools] } : {}),
    }
    const table = this.sectionsTable
    const dispose = this.ctx.effect(() => table.register(entry, { scope }), `prompt-section:${id}`)
    return () => void dispose()
  }

  /** Adds a named variable resolved at each assembly. Throws if the name is taken. */
  registerVariable(name: string, resolve: VariableResolver): () => void {
    checkVariableName(name, 'systemPrompt.registerVariable')
    if (typeof resolve !== 'function') throw new TypeError(`variable "${name}": resolve must be a function`)
    const variables = this.variablesTable
    if (variables.has(name)) throw new SystemPromptError(`variable "${name}" is already defined`)
    const dispose = this.ctx.effect(() => {
      variables.set(name, resolve)
      return () => {
        if (variables.get(name) === resolve) variables.delete(name)
      }
    }, `prompt-variable:${name}`)
    return () => void dispose()
  }

  /**
   * Sets the persona: without a scope it replaces the configured deployment persona; with a scope
   * it shadows the global persona for that agent only. One persona per scope at a time. Without a
   * scope, a caller with a standing scope sets the persona of that scope. `{owns: true}` makes the
   * persona the whole prompt (no identity, no sections) wherever it applies.
   */
  setPersona(text: string, scope?: string, options: PersonaOptions = {}): () => void {
    if (typeof text !== 'string') throw new TypeError('systemPrompt.setPersona: text must be a string')
    scope ??= standingScope(this.ctx)
    this.checkText(scope === undefined ? 'persona' : `persona of scope "${scope}"`, text)
    const personas = this.personas
    const entry: PersonaEntry = { text, owns: options.owns === true }
    const dispose = this.ctx.effect(() => personas.register(entry, { scope }), `persona:${scope ?? 'global'}`)
    return () => void dispose()
  }

  /** The sections visible from `scope` in prompt order (stable first), shadowing applied. */
  sections(scope?: string): ResolvedSection[] {
    return this.ordered(scope).map((entry) => ({ ...entry }))
  }

  /** Names of every known variable, sorted. */
  variables(): string[] {
    return [...this.variablesTable.keys()].sort()
  }

  /** The persona text in effect for `scope` (unrendered). */
  persona(scope?: string): string {
    return this.personas.get('persona', scope)?.text ?? this.defaultPersona
  }

  /** Whether the persona in effect for `scope` owns the whole prompt. */
  personaOwns(scope?: string): boolean {
    return this.personas.get('persona', scope)?.owns === true
  }

  /**
   * Renders the system prompt and the tool list for one request. Identical registrations and input
   * give byte-identical output. Throws SystemPromptError if a variable used by a section has since
   * been unregistered or its resolver throws.
   */
  assemble(input: AssembleInput): AssembledPrompt {
    // Runs for every model request: own state through the plain object, not the per-caller shadow
    // Cordis binds `this` to (where each property read builds proxies).
    const self = plainService(this)
    const cache = new Map<string, string>()
    const lookup = (where: string) => (name: string) => {
      const hit = cache.get(name)
      if (hit !== undefined) return hit
      const resolve = self.variablesTable.get(name)
      if (!resolve) throw new SystemPromptError(`${where} uses variable "{{${name}}}", which is no longer defined`)
      let value: unknown
      try {
        value = resolve(input)
      } catch (error) {
        throw new SystemPromptError(
          `variable "${name}" failed to resolve: ${(error as Error)?.message ?? String(error)}`,
        )
      }
      const text = typeof value === 'string' ? value : String(value)
      cache.set(name, text)
      return text
    }
    const tools = (input.tools ?? []).slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    const persona = self.personas.get('persona', input.scope)
    if (persona?.owns) return { system: tidy(render(persona.text, lookup('persona'))), tools }
    const parts: string[] = [render(self.identity, lookup('identity'))]
    const deferred = input.deferredTools?.length ? new Set(input.deferredTools) : undefined
    const sections = deferred
      ? self.ordered(input.scope).filter((section) => !section.tools?.every((name) => deferred.has(name)))
      : self.ordered(input.scope)
    for (const section of sections)
      if (section.stable) parts.push(render(section.text, lookup(`prompt section "${section.id}"`)))
    parts.push(render(self.persona(input.scope), lookup('persona')))
    for (const section of sections)
      if (!section.stable) parts.push(render(section.text, lookup(`prompt section "${section.id}"`)))
    const system = parts
      .map(tidy)
      .filter((part) => part !== '')
      .join('\n\n')
    return { system, tools }
  }

  private ordered(scope: string | undefined): SectionEntry[] {
    const entries: SectionEntry[] = []
    for (const entry of this.sectionsTable.resolve(scope)) {
      const override = this.overrides.get(entry.id)
      if (override === false) continue
      entries.push(override === undefined ? entry : { ...entry, text: override })
    }
    return entries.sort((a, b) => {
      if (a.stable !== b.stable) return a.stable ? -1 : 1
      if (a.order !== b.order) return a.order - b.order
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
    })
  }

  private checkText(where: string, text: string): void {
    if (typeof text !== 'string') throw new TypeError(`${where}: text must be a string`)
    for (const name of placeholders(text)) {
      if (!this.variablesTable.has(name)) {
        throw new SystemPromptError(
          `${where} uses unknown variable "{{${name}}}" (known: ${[...this.variablesTable.keys()].sort().join(', ')})`,
        )
      }
    }
  }
}

function checkVariableName(name: string, where: string): void {
  if (typeof name !== 'string' || !VARIABLE_NAME_PATTERN.test(name)) {
    throw new TypeError(`${where}: invalid variable name ${JSON.stringify(name)} (must match ${VARIABLE_NAME_PATTERN})`)
  }
}

/** Whether `cwd` is inside a git work tree: a `.git` directory or file in it or an ancestor. */
export function gitRepository(cwd: string): boolean {
  let dir = cwd
  for (;;) {
    try {
      statSync(join(dir, '.git'))
      return true
    } catch {}
    const parent = dirname(dir)
    if (parent === dir) return false
    dir = parent
  }
}

function userShell(): string {
  const shell = process.env.SHELL
  return shell ? basename(shell) : 'unknown'
}

function localDate(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`
}

export const name = 'system-prompt'
export default SystemPrompt
