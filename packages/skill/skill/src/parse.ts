// SKILL.md: a YAML front matter block (`---` lines) with at least `name` and `description`,
// then the Markdown body the model reads when it loads the skill. Parsing never throws: a file
// that does not fit is one problem sentence.
import { createRequire } from 'node:module'
import type * as Yaml from 'yaml'

// Loaded on the first SKILL.md: a boot without skills never pays for the YAML parser.
let yamlModule: typeof Yaml | undefined
const parseYaml = (text: string): unknown =>
  (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml).parse(text)

export const SKILL_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/
export const MAX_DESCRIPTION_CHARS = 1024

export interface ParsedSkill {
  name: string
  description: string
  body: string
  /** False when the front matter says `disable-model-invocation: true` (user-only skills). */
  modelInvocable: boolean
  /** Every front matter field, as parsed. */
  frontMatter: Record<string, unknown>
}

export type ParseResult = { ok: true; skill: ParsedSkill } | { ok: false; problem: string }

export function parseSkillFile(text: string): ParseResult {
  const source = text.replace(/^\uFEFF/, '')
  const match = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(source)
  if (!match)
    return {
      ok: false,
      problem:
        'no front matter: the file must start with a "---" line, the YAML fields name and description, and a closing "---" line',
    }
  let data: unknown
  try {
    data = parseYaml(match[1])
  } catch (error) {
    const message = ((error as Error).message ?? String(error)).split('\n')[0]
    return { ok: false, problem: `the front matter is not valid YAML (${message})` }
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    return { ok: false, problem: 'the front matter must be a YAML mapping with name and description' }
  const fields = data as Record<string, unknown>
  const name = fields.name
  if (typeof name !== 'string' || name.trim() === '')
    return { ok: false, problem: 'the front matter has no "name" (a short lower-case identifier such as pdf-forms)' }
  if (!SKILL_NAME_PATTERN.test(name.trim())) {
    return {
      ok: false,
      problem: `the name ${JSON.stringify(name)} is not allowed: use 1-64 lower-case letters, digits, "-" or "_", starting with a letter or digit`,
    }
  }
  const description = fields.description
  if (typeof description !== 'string' || description.trim() === '')
    return {
      ok: false,
      problem: 'the front matter has no "description" (one or two sentences on what the skill does and when to use it)',
    }
  if (description.length > MAX_DESCRIPTION_CHARS)
    return {
      ok: false,
      problem: `the description has ${description.length} characters; at most ${MAX_DESCRIPTION_CHARS} are allowed`,
    }
  return {
    ok: true,
    skill: {
      name: name.trim(),
      description: description.trim().replace(/\s+/g, ' '),
      body: source.slice(match[0].length).replace(/^\s*\n/, ''),
      modelInvocable: fields['disable-model-invocation'] !== true,
      frontMatter: fields,
    },
  }
}
