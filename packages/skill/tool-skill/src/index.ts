// @dsh/tool-skill: the model-facing side of skills. The system prompt lists the skills of the
// working directory (name and description only, pinned per session so the prompt prefix stays
// cacheable); the `skill` tool loads one in full (its instructions and the list of its files);
// `/<skill-name>` runs a skill as a command (the skills of the agent's own directory). Nothing is offered while no skill exists, so a
// deployment without skills pays no tokens.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { PromptSession } from '@dsh/system-prompt'
import type { ToolOutput } from '@dsh/tools'
import type { LoadedSkill, SkillInfo } from '@dsh/skill'
import type {} from '@dsh/agent'
import type { Command } from '@dsh/commands'

export interface ToolSkillConfig {
  /** Directory probed at load for skills (the tool appears once any agent's directory has one). Default: the process cwd. */
  cwd?: string
  /** Longest catalog in the system prompt; skills past it are counted, not listed. */
  maxCatalogChars: number
  /** Offer `/<skill-name>` commands for the skills of each agent's working directory. */
  commands: boolean
}

export const Config: Schema<Partial<ToolSkillConfig>, ToolSkillConfig> = Schema.object({
  cwd: Schema.string().description('Directory probed for skills at load (default: the process working directory).'),
  maxCatalogChars: Schema.natural()
    .min(200)
    .default(8_000)
    .description('Longest skill catalog in the system prompt (characters).'),
  commands: Schema.boolean()
    .default(true)
    .description("Offer /<skill-name> commands for the skills of each agent's working directory."),
})

export const name = 'tool-skill'
export const inject = ['tools', 'skills']

export const CATALOG_HEADER =
  'Skills: instructions packaged for particular tasks. When a task matches a skill below, call the `skill` tool with its name ' +
  'before you start and follow what it says; load a skill only when it is relevant.'

/** The catalog text for a list of skills ('' when none is model-invocable). */
export function catalog(skills: SkillInfo[], maxChars: number): string {
  const visible = skills.filter((skill) => skill.modelInvocable)
  if (visible.length === 0) return ''
  const lines: string[] = []
  let size = CATALOG_HEADER.length
  let omitted = 0
  for (const skill of visible) {
    const line = `- ${skill.name}: ${skill.description}`
    if (size + line.length + 1 > maxChars) {
      omitted++
      continue
    }
    lines.push(line)
    size += line.length + 1
  }
  if (omitted > 0)
    lines.push(
      `- (${omitted} more skill${omitted === 1 ? '' : 's'} not listed for space; the skill tool names them all when asked for an unknown one)`,
    )
  return [CATALOG_HEADER, ...lines].join('\n')
}

function fail(code: string, message: string): ToolOutput {
  return { content: `Error [${code}]: ${message}`, isError: true, error: { code, message } }
}

const COMMAND_NAME = /^[a-z][a-z0-9-]*$/

/** The id of the command source that offers `/<skill-name>` (menus group by it). */
export const SKILL_COMMAND_SOURCE = 'skill'
/** Description prefix of a skill only the user can invoke (`disable-model-invocation: true`). */
export const USER_ONLY_PREFIX = '(user only) '

/**
 * `/<skill-name> [request]` for every skill visible from `cwd` whose name is a valid command name,
 * user-only skills included (a slash command is their only entry point). Running one loads the
 * skill and sends its body, then the request, as the user's message.
 */
export function skillCommands(ctx: Context, cwd: string): Command[] {
  return ctx.skills
    .list(cwd)
    .filter((skill) => COMMAND_NAME.test(skill.name))
    .map((skill) => {
      const text = skill.description.length > 120 ? `${skill.description.slice(0, 117)}...` : skill.description
      return {
        name: skill.name,
        description: `Skill: ${skill.modelInvocable ? '' : USER_ONLY_PREFIX}${text}`,
        usage: '[request]',
        async run(args, context) {
          const loaded = await ctx.skills.load(skill.name, context.agent.cwd)
          const request = args.trim()
          void context.agent.send(`${loaded.body.trimEnd()}${request ? `\n\n${request}` : ''}`)
          return `Running the skill "${skill.name}".`
        },
      } satisfies Command
    })
}

export function apply(ctx: Context, config: ToolSkillConfig): void {
  // One catalog per session and directory: the prompt does not change under a running session.
  const pinned = new WeakMap<PromptSession, Map<string, string>>()
  const catalogFor = (cwd: string, session?: PromptSession): string => {
    if (!session) return catalog(ctx.skills.list(cwd), config.maxCatalogChars)
    let byCwd = pinned.get(session)
    if (!byCwd) pinned.set(session, (byCwd = new Map()))
    let text = byCwd.get(cwd)
    if (text === undefined) byCwd.set(cwd, (text = catalog(ctx.skills.list(cwd), config.maxCatalogChars)))
    return text
  }

  let offered = false
  const offer = () => {
    if (offered) return
    offered = true
    ctx.inject(['systemPrompt'], (inner) => {
      inner.systemPrompt.registerVariable('skills', (input) => catalogFor(input.cwd, input.session))
      inner.systemPrompt.registerSection({ id: 'tool:skill', order: 340, text: '{{skills}}' })
    })
    ctx.tools.register<{ name: string }>({
      name: 'skill',
      description:
        'Load a skill: its full instructions and the list of its files. Use it when the task matches a skill in the ' +
        'Skills list of the system prompt, before doing the work. Paths in the instructions are relative to the skill directory given in the result.',
      parameters: {
        type: 'object',
        properties: { name: { type: 'string', description: "The skill's name, exactly as listed." } },
        required: ['name'],
        additionalProperties: false,
      },
      concurrencySafe: true,
      async execute(args, call) {
        const skills = ctx.skills.list(call.cwd).filter((skill) => skill.modelInvocable)
        const info = skills.find((skill) => skill.name === args.name)
        if (!info) {
          const names = skills.map((skill) => skill.name)
          return fail(
            'SKILL_NOT_FOUND',
            `there is no skill named ${JSON.stringify(args.name)}. ${names.length > 0 ? `Available skills: ${names.join(', ')}.` : 'No skills are available in this directory.'}`,
          )
        }
        let loaded: LoadedSkill
        try {
          loaded = await ctx.skills.load(info.name, call.cwd)
        } catch (error) {
          return fail('SKILL_UNREADABLE', `the skill "${info.name}" could not be loaded: ${(error as Error).message}`)
        }
        const parts = [`Skill "${info.name}" (${info.location}):`, '', loaded.body.trimEnd()]
        if (info.dir) {
          parts.push('', `Skill directory: ${info.dir}`)
          if (loaded.files.length > 0)
            parts.push(
              `Files in it: ${loaded.files.join(', ')}${loaded.truncatedFiles ? ', ... (more not listed)' : ''}`,
            )
        }
        return {
          content: parts.join('\n'),
          meta: { skill: info.name, location: info.location, files: loaded.files.length },
        }
      },
    })
  }

  const probe = (cwd: string) => {
    if (!offered && ctx.skills.list(cwd).some((skill) => skill.modelInvocable)) offer()
  }
  const startCwd = config.cwd ?? process.cwd()
  probe(startCwd)
  ctx.on('agent/created', (agent) => probe(agent.cwd))

  if (config.commands) {
    ctx.inject(['commands'], (inner) => {
      inner.commands.provide({ id: SKILL_COMMAND_SOURCE, list: (agent) => skillCommands(ctx, agent.cwd) })
    })
  }
}
