// What a `.env` file may supply, and its syntax check. Shared by the launcher (@dsh/app-boot, which
// copies `.env` values into process.env before any plugin loads) and @dsh/credentials-local (which
// reads the same files as credential layers), so both apply one rule.
//
// The project `.env` lives in the workspace, where a confined command can write it. It may only
// supply provider credentials: never a permission, sandbox, endpoint (base URL) or `DSH_*` setting.
// `$DSH_HOME/.env` is the user's own file outside the workspace and keeps full power, except that it
// cannot move `$DSH_HOME` itself (the home is resolved before that file is read).

/**
 * Credential names a project `.env` may supply by default: the DeepSeek key (@dsh/llm-deepseek)
 * and the API-key variables pi-ai's providers consult (@dsh/llm-pi-ai without `apiKeyEnv`), and
 * the E2B key of the remote world (@dsh/e2b).
 */
export const PROJECT_ENV_CREDENTIALS: readonly string[] = Object.freeze([
  'DEEPSEEK_API_KEY',
  'E2B_API_KEY',
  'OPENAI_API_KEY',
  'AZURE_OPENAI_API_KEY',
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'ANTHROPIC_OAUTH_TOKEN',
  'GEMINI_API_KEY',
  'GOOGLE_CLOUD_API_KEY',
  'GROQ_API_KEY',
  'CEREBRAS_API_KEY',
  'XAI_API_KEY',
  'MISTRAL_API_KEY',
  'OPENROUTER_API_KEY',
  'AI_GATEWAY_API_KEY',
  'ZAI_API_KEY',
  'ZAI_CODING_CN_API_KEY',
  'MINIMAX_API_KEY',
  'MINIMAX_CN_API_KEY',
  'MOONSHOT_API_KEY',
  'KIMI_API_KEY',
  'HF_TOKEN',
  'FIREWORKS_API_KEY',
  'TOGETHER_API_KEY',
  'BASETEN_API_KEY',
  'NVIDIA_API_KEY',
  'OPENCODE_API_KEY',
  'META_API_KEY',
  'CLOUDFLARE_API_KEY',
  'COPILOT_GITHUB_TOKEN',
  'AWS_BEARER_TOKEN_BEDROCK',
  'ANT_LING_API_KEY',
  'TYPESAFE_API_KEY',
  'RADIUS_API_KEY',
  'QWEN_TOKEN_PLAN_API_KEY',
  'QWEN_TOKEN_PLAN_CN_API_KEY',
  'QWEN_TOKEN_PLAN_TEAM_API_KEY',
  'QWEN_TOKEN_PLAN_TEAM_CN_API_KEY',
  'QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY',
  'QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY',
  'XIAOMI_API_KEY',
  'XIAOMI_TOKEN_PLAN_CN_API_KEY',
  'XIAOMI_TOKEN_PLAN_AMS_API_KEY',
  'XIAOMI_TOKEN_PLAN_SGP_API_KEY',
])

/**
 * The variable naming extra credential names a project `.env` may supply (comma or space
 * separated). Honoured only from trusted places: the inherited environment or `$DSH_HOME/.env`
 * (a project `.env` can never set a `DSH_*` variable) and credentials-local's `projectEnvAllow`.
 */
export const PROJECT_ENV_ALLOW_VAR = 'DSH_PROJECT_ENV_ALLOW'

/** The rule for an added name: a credential-shaped name, never a `DSH_*` setting. */
const EXTRA_NAME = /^[A-Za-z_][A-Za-z0-9_]*_(KEY|TOKEN|SECRET|PASSWORD)$/i

/** Why `name` cannot be added to the project `.env` allowlist, or undefined when it can. */
export function projectEnvNameProblem(name: string): string | undefined {
  if (/^DSH_/i.test(name)) return `"${name}" is a dsh setting, which a project .env never supplies`
  if (!EXTRA_NAME.test(name))
    return `"${name}" is not a credential name (it must end in _KEY, _TOKEN, _SECRET or _PASSWORD)`
  return undefined
}

/**
 * The names a project `.env` may supply: the defaults plus `extra` (a list, or the text of
 * `DSH_PROJECT_ENV_ALLOW`). Throws an Error naming `source` and the first unacceptable name.
 */
export function projectEnvAllowlist(
  extra: string | readonly string[] | undefined,
  source = PROJECT_ENV_ALLOW_VAR,
): Set<string> {
  const names = typeof extra === 'string' ? extra.split(/[\s,]+/).filter(Boolean) : [...(extra ?? [])]
  for (const name of names) {
    const problem = projectEnvNameProblem(name)
    if (problem) throw new Error(`${source}: ${problem}`)
  }
  return new Set([...PROJECT_ENV_CREDENTIALS, ...names])
}

/** Splits a project `.env`'s values into the allowed ones and the names it ignores (sorted). */
export function filterProjectEnv<T>(
  values: Record<string, T>,
  allow: ReadonlySet<string>,
): { kept: Record<string, T>; ignored: string[] } {
  const kept: Record<string, T> = {}
  const ignored: string[] = []
  for (const [name, value] of Object.entries(values)) {
    if (allow.has(name)) kept[name] = value
    else ignored.push(name)
  }
  return { kept, ignored: ignored.sort() }
}

/** Names `$DSH_HOME/.env` cannot set: the home is resolved before the file is read. */
export const HOME_ENV_FORBIDDEN: readonly string[] = Object.freeze(['DSH_HOME'])

/** The one-line warning for ignored `.env` names: the file and the names, never a value. */
export function ignoredEnvWarning(file: string, names: readonly string[], project: boolean): string {
  const why = project
    ? `a project .env supplies only provider credentials (add credential names with ${PROJECT_ENV_ALLOW_VAR} in the environment or $DSH_HOME/.env)`
    : 'DSH_HOME cannot be set from a .env file'
  return `${file}: ignored ${names.join(', ')}: ${why}`
}

const ASSIGNMENT = /^(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*=\s*(.*)$/

/**
 * Checks dotenv text line by line (Node's `util.parseEnv` accepts anything, turning a stray line
 * into a garbage name). Returns the first bad line and what is wrong with it, never its content.
 */
export function findEnvSyntaxError(text: string): { line: number; problem: string } | undefined {
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim()
    if (line === '' || line.startsWith('#')) continue
    const m = ASSIGNMENT.exec(line)
    if (!m) return { line: i + 1, problem: 'expected NAME=value (or a # comment)' }
    const quote = m[1][0]
    if (quote !== '"' && quote !== "'" && quote !== '`') continue
    if (m[1].indexOf(quote, 1) !== -1) continue
    // A quoted value may span lines: it ends at the next line holding the same quote.
    let end = i + 1
    while (end < lines.length && !lines[end].includes(quote)) end++
    if (end >= lines.length) return { line: i + 1, problem: `the ${quote}-quoted value is never closed` }
    i = end
  }
  return undefined
}
