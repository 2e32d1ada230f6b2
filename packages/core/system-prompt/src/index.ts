// @dsh/system-prompt: the system prompt assembly registry (`ctx.systemPrompt`).
//
// Layout of an assembled prompt, parts separated by one blank line:
//   identity -> stable sections (by order, then id) -> persona -> volatile sections (by order, then id)
// Stable text comes first so a provider's prompt-prefix cache survives changes in volatile parts.
import { arch, release, type as osType } from 'node:os'
import { Context, Service } from 'cordis'
import Schema from 'schemastery'
import { ScopedRegistry } from '@dsh/scope'
import type { ToolSchema } from '@dsh/llm'
import { VARIABLE_NAME_PATTERN, placeholders, render, tidy } from './template.ts'

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
}

export interface AssembleInput {
  provider: string
  model: string
  cwd: string
  scope?: string
  /** Tool schemas to present (normally `ctx.tools.schemas(scope)`); returned sorted by name. */
  tools?: ToolSchema[]
  /** Overrides the `{{date}}` variable (YYYY-MM-DD); default: today in local time. */
  date?: string
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
}

/** A section or persona refers to a variable that does not exist, or a variable failed to resolve. */
export class SystemPromptError extends Error {
  override name = 'SystemPromptError'
}

export const DEFAULT_IDENTITY =
  'You are dsh, a coding agent running inside the dsh harness. You work in the user\'s project ' +
  'through the tools you are given: read before you change things, make the smallest change that ' +
  'solves the task, check your work when you can, and report plainly what you did and what is left.'

export const BUILTIN_VARIABLES = ['model', 'provider', 'cwd', 'date', 'os'] as const

const builtins: Record<(typeof BUILTIN_VARIABLES)[number], VariableResolver> = {
  model: (input) => input.model,
  provider: (input) => input.provider,
  cwd: (input) => input.cwd,
  date: (input) => input.date ?? localDate(new Date()),
  os: () => `${osType()} ${release()} (${arch()})`,
}

/** A registered section as stored: `stable` resolved to a boolean. */
export interface ResolvedSection {
  id: string
  order: number
  text: string
  stable: boolean
  scope?: string
}
type SectionEntry = ResolvedSection

interface PersonaEntry {
  text: string
}

declare module 'cordis' {
  interface Context {
    systemPrompt: SystemPrompt
  }
}

export class SystemPrompt extends Service {
  static Config: Schema<SystemPromptConfig> = Schema.object({
    identity: Schema.string().default(DEFAULT_IDENTITY).description('The harness identity: always the first part of the prompt.'),
    persona: Schema.string().default('').description('The deployment persona, placed after the stable sections.'),
    variables: Schema.dict(Schema.string()).default({}).description('Static `{{name}}` variables.'),
  })

  readonly identity: string
  private readonly variablesTable = new Map<string, VariableResolver>()
  private readonly sectionsTable = new ScopedRegistry<SectionEntry>({ key: (section) => section.id, label: 'prompt section' })
  private readonly personas = new ScopedRegistry<PersonaEntry>({ key: () => 'persona', label: 'persona' })
  private readonly defaultPersona: string

  constructor(ctx: Context, config: SystemPromptConfig) {
    super(ctx, 'systemPrompt')
    for (const name of BUILTIN_VARIABLES) this.variablesTable.set(name, builtins[name])
    for (const [name, value] of Object.entries(config.variables ?? {})) {
      checkVariableName(name, 'config.variables')
      if (this.variablesTable.has(name)) throw new SystemPromptError(`config.variables: "${name}" is a built-in variable and cannot be redefined`)
      this.variablesTable.set(name, () => value)
    }
    this.checkText('config.identity', config.identity)
    this.checkText('config.persona', config.persona)
    this.identity = config.identity
    this.defaultPersona = config.persona
  }

  /**
   * Adds a section. Throws on a bad shape, a duplicate id in the same scope, or a placeholder naming
   * an unknown variable. Undone by the disposer or when the calling plugin unloads.
   */
  registerSection(section: PromptSection): () => void {
    if (section === null || typeof section !== 'object') throw new TypeError('systemPrompt.registerSection: expected a section object')
    const { id, order, text, scope } = section
    if (typeof id !== 'string' || id === '') throw new TypeError('systemPrompt.registerSection: id must be a non-empty string')
    if (typeof order !== 'number' || !Number.isFinite(order)) throw new TypeError(`prompt section "${id}": order must be a finite number`)
    if (typeof text !== 'string') throw new TypeError(`prompt section "${id}": text must be a string`)
    if (section.stable !== undefined && typeof section.stable !== 'boolean') throw new TypeError(`prompt section "${id}": stable must be a boolean`)
    if (scope !== undefined && (typeof scope !== 'string' || scope === '')) throw new TypeError(`prompt section "${id}": scope must be a non-empty string when given`)
    this.checkText(`prompt section "${id}"`, text)
    const entry: SectionEntry = { id, order, text, stable: section.stable ?? true, ...(scope !== undefined ? { scope } : {}) }
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
   * it shadows the global persona for that agent only. One persona per scope at a time.
   */
  setPersona(text: string, scope?: string): () => void {
    if (typeof text !== 'string') throw new TypeError('systemPrompt.setPersona: text must be a string')
    this.checkText(scope === undefined ? 'persona' : `persona of scope "${scope}"`, text)
    const personas = this.personas
    const dispose = this.ctx.effect(() => personas.register({ text }, { scope }), `persona:${scope ?? 'global'}`)
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

  /**
   * Renders the system prompt and the tool list for one request. Identical registrations and input
   * give byte-identical output. Throws SystemPromptError if a variable used by a section has since
   * been unregistered or its resolver throws.
   */
  assemble(input: AssembleInput): AssembledPrompt {
    const cache = new Map<string, string>()
    const lookup = (where: string) => (name: string) => {
      const hit = cache.get(name)
      if (hit !== undefined) return hit
      const resolve = this.variablesTable.get(name)
      if (!resolve) throw new SystemPromptError(`${where} uses variable "{{${name}}}", which is no longer defined`)
      let value: unknown
      try {
        value = resolve(input)
      } catch (error) {
        throw new SystemPromptError(`variable "${name}" failed to resolve: ${(error as Error)?.message ?? String(error)}`)
      }
      const text = typeof value === 'string' ? value : String(value)
      cache.set(name, text)
      return text
    }
    const parts: string[] = [render(this.identity, lookup('identity'))]
    const sections = this.ordered(input.scope)
    for (const section of sections) if (section.stable) parts.push(render(section.text, lookup(`prompt section "${section.id}"`)))
    parts.push(render(this.persona(input.scope), lookup('persona')))
    for (const section of sections) if (!section.stable) parts.push(render(section.text, lookup(`prompt section "${section.id}"`)))
    const system = parts.map(tidy).filter((part) => part !== '').join('\n\n')
    const tools = (input.tools ?? []).slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    return { system, tools }
  }

  private ordered(scope: string | undefined): SectionEntry[] {
    return this.sectionsTable.resolve(scope).sort((a, b) => {
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

function localDate(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`
}

export const name = 'system-prompt'
export default SystemPrompt
