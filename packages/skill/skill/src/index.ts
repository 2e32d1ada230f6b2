// @dsh/skill: the skill registry (`ctx.skills`). Providers (the local filesystem, a package that
// ships a skill) contribute skills per working directory; the registry merges them by priority,
// logs each malformed skill once, and loads a skill's body through the provider that owns it.
// No I/O of its own.
import { type Context, Service } from 'cordis'
import { CodedError } from '@dsh/brand'

export {
  parseSkillFile,
  SKILL_NAME_PATTERN,
  MAX_DESCRIPTION_CHARS,
  type ParsedSkill,
  type ParseResult,
} from './parse.ts'

/** What the catalog knows about a skill without loading it. */
export interface SkillInfo {
  name: string
  /** One or two sentences: what the skill does and when to use it. */
  description: string
  /** Id of the provider that owns it. */
  provider: string
  /** Where it lives, for messages (a SKILL.md path for the filesystem provider). */
  location: string
  /** The skill's directory when it has one (its other files are resolved against it). */
  dir?: string
  /** False for user-only skills (`disable-model-invocation: true`): not in the model's catalog. */
  modelInvocable: boolean
}

/** A skill that could not be read, with a sentence saying why. */
export interface SkillProblem {
  location: string
  message: string
}

export interface LoadedSkill {
  info: SkillInfo
  /** The instructions (SKILL.md without its front matter). */
  body: string
  /** Other files of the skill, relative to `dir`, sorted; may be cut (see `truncatedFiles`). */
  files: string[]
  truncatedFiles?: boolean
}

export interface SkillListing {
  skills: SkillInfo[]
  problems: SkillProblem[]
}

export interface SkillProvider {
  /** Unique among providers. */
  id: string
  /** Higher wins when two providers offer the same name (default 0). */
  priority?: number
  /** The skills visible from `cwd`. Synchronous: it is called while a system prompt is assembled. */
  list(cwd: string): SkillListing
  load(info: SkillInfo): Promise<LoadedSkill>
}

export class SkillError extends CodedError<'NOT_FOUND' | 'UNREADABLE' | 'MALFORMED'> {
  override name = 'SkillError'
}

declare module 'cordis' {
  interface Context {
    skills: SkillRegistry
  }
}

export class SkillRegistry extends Service {
  private readonly providers: SkillProvider[] = []
  private readonly warned = new Set<string>()

  constructor(ctx: Context) {
    super(ctx, 'skills')
  }

  /** Adds a provider; undone by the disposer or when the calling plugin unloads. A duplicate id throws. */
  register(provider: SkillProvider): () => void {
    if (
      !provider ||
      typeof provider.id !== 'string' ||
      provider.id === '' ||
      typeof provider.list !== 'function' ||
      typeof provider.load !== 'function'
    ) {
      throw new TypeError('skills.register: expected {id, list(cwd), load(info)}')
    }
    if (this.providers.some((p) => p.id === provider.id))
      throw new TypeError(`skills.register: provider "${provider.id}" is already registered`)
    const providers = this.providers
    const dispose = this.ctx.effect(() => {
      providers.push(provider)
      return () => {
        const index = providers.indexOf(provider)
        if (index >= 0) providers.splice(index, 1)
      }
    }, `skill-provider:${provider.id}`)
    return () => void dispose()
  }

  /**
   * Every skill visible from `cwd`, sorted by name; for a name offered twice the provider with the
   * higher priority (then the earlier registration) wins. Each new problem is logged once.
   */
  list(cwd: string): SkillInfo[] {
    return this.listing(cwd).skills
  }

  /** Skills that could not be read, as of the last scan of `cwd`. */
  problems(cwd: string): SkillProblem[] {
    return this.listing(cwd).problems
  }

  get(name: string, cwd: string): SkillInfo | undefined {
    return this.list(cwd).find((skill) => skill.name === name)
  }

  /** Loads a skill's body and file list; rejects with a SkillError (`NOT_FOUND`, `UNREADABLE`, `MALFORMED`). */
  async load(name: string, cwd: string): Promise<LoadedSkill> {
    const info = this.get(name, cwd)
    if (!info) throw new SkillError('NOT_FOUND', `there is no skill named "${name}"`)
    const provider = this.providers.find((p) => p.id === info.provider)
    if (!provider) throw new SkillError('NOT_FOUND', `the provider of skill "${name}" is gone`)
    return provider.load(info)
  }

  private listing(cwd: string): SkillListing {
    const ordered = this.providers
      .map((provider, index) => ({ provider, index }))
      .sort((a, b) => (b.provider.priority ?? 0) - (a.provider.priority ?? 0) || a.index - b.index)
    const byName = new Map<string, SkillInfo>()
    const problems: SkillProblem[] = []
    for (const { provider } of ordered) {
      let listing: SkillListing
      try {
        listing = provider.list(cwd)
      } catch (error) {
        listing = {
          skills: [],
          problems: [{ location: `provider ${provider.id}`, message: `listing failed: ${(error as Error).message}` }],
        }
      }
      for (const skill of listing.skills) if (!byName.has(skill.name)) byName.set(skill.name, skill)
      problems.push(...listing.problems)
    }
    for (const problem of problems) {
      const key = `${problem.location}\u0000${problem.message}`
      if (this.warned.has(key)) continue
      this.warned.add(key)
      this.ctx.logger('skill').warn('skipped the skill %s: %s', problem.location, problem.message)
    }
    return { skills: [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)), problems }
  }
}

export const name = 'skill'
export default SkillRegistry
