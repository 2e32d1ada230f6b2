// @dsh/skill-filesystem: skills from directories on the local disk. Each skill is a directory
// holding a SKILL.md; the roots are the project's `.dsh/skills`, `.claude/skills` and
// `.agents/skills` (under the working directory) and the user's `$DSH_HOME/skills`. Parsed files
// are cached by path, mtime and size, so listing on every prompt assembly costs a few stats.
import { closeSync, type Dirent, openSync, readdirSync, readFileSync, type Stats, statSync } from 'node:fs'
import { isAbsolute, join, relative, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import {
  parseSkillFile,
  SkillError,
  type LoadedSkill,
  type ParsedSkill,
  type SkillInfo,
  type SkillListing,
  type SkillProblem,
} from '@dsh/skill'
import type {} from '@dsh/home-paths'
import { harnessReadRefusal, openedPath } from '@dsh/sandbox-policy'

/** A resolved sandbox policy (undefined: no policy owner loaded). */
type SandboxPolicy = Parameters<typeof harnessReadRefusal>[1]

/** Thrown for a SKILL.md the harness must not read for the model. */
class Refused extends Error {}

export interface SkillFilesystemConfig {
  /** Project roots, relative to the working directory, in priority order. */
  projectDirs: string[]
  /** The user's skills; default `$DSH_HOME/skills`. */
  userDir?: string
  /** Most files listed when a skill is loaded. */
  maxFiles: number
}

export const Config: Schema<Partial<SkillFilesystemConfig>, SkillFilesystemConfig> = Schema.object({
  projectDirs: Schema.array(Schema.string())
    .default(['.dsh/skills', '.claude/skills', '.agents/skills'])
    .description('Project skill roots, relative to the working directory, highest priority first.'),
  userDir: Schema.string().description("The user's skill root (default: $DSH_HOME/skills)."),
  maxFiles: Schema.natural().min(1).default(50).description('Most files of a skill listed when it is loaded.'),
})

export const name = 'skill-filesystem'
export const inject = ['skills', 'homePaths']

const SKIP_DIRS = new Set(['node_modules', '.git', '__pycache__'])

type Cached = { key: string; result: { skill: ParsedSkill } | { problem: string } }

/** Lists and loads SKILL.md directories under the given roots. Exported for tests and embedders. */
export class SkillDirectories {
  private readonly cache = new Map<string, Cached>()
  /** Per listed SKILL.md: the working directory it was found for and whether it is a project skill. */
  private readonly origins = new Map<string, { cwd: string; project: boolean; root: string }>()

  /**
   * `policy` gives the sandbox policy for a working directory: in a confining mode a SKILL.md the
   * sandbox hides is not read (sandbox-policy's `harnessReadRefusal`). A project skill must
   * really lie in the working directory in every mode (a cloned repository's skill linked to a
   * file elsewhere is not read); the user's skills may be links anywhere the user chose.
   */
  constructor(
    private readonly config: {
      projectDirs: string[]
      userDir: string
      maxFiles: number
      policy?: (cwd: string) => SandboxPolicy
    },
  ) {}

  /** Roots for `cwd`, highest priority first: project roots, then the user root. */
  roots(cwd: string): { dir: string; kind: 'project' | 'user'; within: string }[] {
    // A project skill must really lie in the working directory; a root the user configured as an
    // absolute path is the user's own choice, and its skills must lie in it.
    const project = this.config.projectDirs.map((dir) =>
      isAbsolute(dir)
        ? { dir, kind: 'project' as const, within: dir }
        : { dir: resolve(cwd, dir), kind: 'project' as const, within: cwd },
    )
    return [...project, { dir: this.config.userDir, kind: 'user' as const, within: this.config.userDir }]
  }

  list(cwd: string): SkillListing {
    const skills: SkillInfo[] = []
    const problems: SkillProblem[] = []
    const seen = new Set<string>()
    for (const root of this.roots(cwd)) {
      let entries: string[]
      try {
        entries = readdirSync(root.dir).sort()
      } catch {
        continue
      }
      for (const entry of entries) {
        if (entry.startsWith('.')) continue
        const dir = join(root.dir, entry)
        const file = join(dir, 'SKILL.md')
        let stat: Stats
        try {
          stat = statSync(file)
        } catch {
          continue
        }
        if (!stat.isFile()) continue
        this.origins.set(file, { cwd, project: root.kind === 'project', root: root.within })
        const parsed = this.parse(file, `${stat.mtimeMs}:${stat.size}`)
        if ('problem' in parsed) {
          problems.push({ location: file, message: parsed.problem })
          continue
        }
        const skill = parsed.skill
        if (seen.has(skill.name)) continue
        seen.add(skill.name)
        skills.push({
          name: skill.name,
          description: skill.description,
          provider: 'filesystem',
          location: file,
          dir,
          modelInvocable: skill.modelInvocable,
        })
      }
    }
    return { skills, problems }
  }

  async load(info: SkillInfo): Promise<LoadedSkill> {
    let text: string
    try {
      text = this.read(info.location)
    } catch (error) {
      if (error instanceof Refused) throw new SkillError('UNREADABLE', `not reading ${info.location}: ${error.message}`)
      throw new SkillError(
        'UNREADABLE',
        `cannot read ${info.location} (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      )
    }
    const parsed = parseSkillFile(text)
    if (!parsed.ok) throw new SkillError('MALFORMED', `${info.location}: ${parsed.problem}`)
    const { files, truncated } = info.dir ? this.files(info.dir) : { files: [], truncated: false }
    return { info, body: parsed.skill.body, files, ...(truncated ? { truncatedFiles: true } : {}) }
  }

  private parse(file: string, key: string): Cached['result'] {
    const hit = this.cache.get(file)
    if (hit && hit.key === key) return hit.result
    let result: Cached['result']
    try {
      const parsed = parseSkillFile(this.read(file))
      result = parsed.ok ? { skill: parsed.skill } : { problem: parsed.problem }
    } catch (error) {
      // A refusal depends on the mode, which may change: never cached.
      if (error instanceof Refused) return { problem: `not read: ${error.message}` }
      result = { problem: `cannot read the file (${(error as NodeJS.ErrnoException).code ?? String(error)})` }
    }
    this.cache.set(file, { key, result })
    return result
  }

  /**
   * The text of a SKILL.md, checked on what was really opened (a link swapped after the listing
   * changes nothing) before a byte is read; throws `Refused` with the reason.
   */
  private read(file: string): string {
    const user = relative(this.config.userDir, file)
    const origin = this.origins.get(file) ?? {
      cwd: process.cwd(),
      project: user.startsWith('..') || isAbsolute(user),
      root: process.cwd(),
    }
    const fd = openSync(file, 'r')
    try {
      const opened = openedPath(fd)
      const refused = harnessReadRefusal(file, this.config.policy?.(origin.cwd), {
        ...(origin.project ? { roots: [origin.root] } : {}),
        ...(opened !== undefined ? { opened } : {}),
      })
      if (refused !== undefined) throw new Refused(refused)
      return readFileSync(fd, 'utf8')
    } finally {
      closeSync(fd)
    }
  }

  /** The skill's files other than SKILL.md, breadth first, at most `maxFiles`. */
  private files(dir: string): { files: string[]; truncated: boolean } {
    const out: string[] = []
    const queue = [dir]
    let truncated = false
    while (queue.length > 0) {
      const current = queue.shift()!
      let entries: Dirent[]
      try {
        entries = readdirSync(current, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))
      } catch {
        continue
      }
      for (const entry of entries) {
        const path = join(current, entry.name)
        if (entry.isDirectory()) {
          if (!SKIP_DIRS.has(entry.name)) queue.push(path)
          continue
        }
        const rel = relative(dir, path)
        if (rel === 'SKILL.md') continue
        if (out.length >= this.config.maxFiles) {
          truncated = true
          break
        }
        out.push(rel)
      }
      if (truncated) break
    }
    return { files: out.sort(), truncated }
  }
}

export function apply(ctx: Context, config: SkillFilesystemConfig): void {
  const directories = new SkillDirectories({
    projectDirs: config.projectDirs,
    userDir: config.userDir ?? ctx.homePaths.skills,
    maxFiles: config.maxFiles,
    policy: (cwd) => ctx.get('sandboxPolicy')?.resolve({ cwd }),
  })
  ctx.skills.register({
    id: 'filesystem',
    list: (cwd) => directories.list(cwd),
    load: (info) => directories.load(info),
  })
}
