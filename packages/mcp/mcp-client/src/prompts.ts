// MCP prompts as slash commands: `/mcp__<server>__<prompt> args`. The arguments a human types are
// mapped onto the prompt's declared arguments (`key=value` pairs, or values in declaration order),
// the prompt is fetched with `prompts/get`, and its messages become one human message of the
// agent's conversation (a turn, as a typed message would start).
import type { Logger } from 'cordis'
import type { GetPromptResult, Prompt } from '@modelcontextprotocol/sdk/types.js'
import type { Command } from '@dsh/commands'

/** Command names the registry accepts: lower-case letters, digits, `_` and `-`, a letter first. */
export function promptCommandName(server: string, prompt: string): string {
  const part = (text: string) => text.toLowerCase().replace(/[^a-z0-9_-]/g, '_')
  return `mcp__${part(server)}__${part(prompt)}`
}

/** `city=<city> [state=<state>]`, from the declared arguments (empty when there are none). */
export function promptUsage(prompt: Prompt): string {
  return (prompt.arguments ?? [])
    .map((arg) => (arg.required ? `${arg.name}=<${arg.name}>` : `[${arg.name}=<${arg.name}>]`))
    .join(' ')
}

/** Splits an argument line into words; `"..."` and `'...'` quote spaces (also after `key=`). */
export function splitWords(line: string): string[] {
  const words: string[] = []
  const pattern = /(?:[^\s"']+|"[^"]*"|'[^']*')+/g
  for (const match of line.matchAll(pattern)) words.push(match[0].replace(/"([^"]*)"|'([^']*)'/g, '$1$2'))
  return words
}

/**
 * The prompt's arguments from what the human typed after the command: `key=value` words name a
 * declared argument; other words fill the declared arguments not named yet, in order (the last one
 * takes the rest of the line). Throws one line for an unknown name, a value given twice, a word
 * too many, or a required argument left out (naming the usage).
 */
export function promptArguments(prompt: Prompt, line: string, command: string): Record<string, string> {
  const declared = prompt.arguments ?? []
  const names = new Set(declared.map((arg) => arg.name))
  const out: Record<string, string> = {}
  const loose: string[] = []
  const usage = () => {
    const text = promptUsage(prompt)
    return `usage: /${command}${text ? ` ${text}` : ''}`
  }
  for (const word of splitWords(line.trim())) {
    const pair = /^([A-Za-z0-9_.-]+)=([\s\S]*)$/.exec(word)
    if (pair && names.has(pair[1])) {
      if (pair[1] in out) throw new Error(`the argument "${pair[1]}" is given twice (${usage()})`)
      out[pair[1]] = pair[2]
    } else if (pair && declared.length > 0) {
      throw new Error(
        `the prompt has no argument "${pair[1]}"; its arguments are ${declared.map((a) => `"${a.name}"`).join(', ')} (${usage()})`,
      )
    } else loose.push(word)
  }
  const open = declared.filter((arg) => !(arg.name in out))
  if (loose.length > 0) {
    if (open.length === 0)
      throw new Error(
        declared.length === 0
          ? `the prompt takes no arguments, but "${loose.join(' ')}" was given`
          : `too many arguments: "${loose.join(' ')}" (${usage()})`,
      )
    // Values fill the open arguments in order; the last open one takes whatever is left.
    for (let i = 0; i < open.length && loose.length > 0; i++) {
      out[open[i].name] = i === open.length - 1 ? loose.splice(0).join(' ') : loose.shift()!
    }
  }
  const missing = declared.filter((arg) => arg.required && (out[arg.name] === undefined || out[arg.name] === ''))
  if (missing.length > 0)
    throw new Error(
      `missing required argument${missing.length > 1 ? 's' : ''} ${missing.map((a) => `"${a.name}"`).join(', ')} (${usage()})`,
    )
  return out
}

/**
 * The text of a prompt's messages, as one human message: text blocks as they are, embedded text
 * resources under `Resource <uri>:`, other blocks described. When the prompt also scripts assistant
 * turns, each message is labelled with its role so the model sees the exchange as written.
 */
export function promptText(result: GetPromptResult): string {
  const labelled = result.messages.some((message) => message.role !== 'user')
  const parts = result.messages.map((message) => {
    const block = message.content as { type: string; text?: string; resource?: { uri: string; text?: string } }
    let text: string
    if (block.type === 'text') text = block.text ?? ''
    else if (block.type === 'resource' && typeof block.resource?.text === 'string')
      text = `Resource ${block.resource.uri}:\n${block.resource.text}`
    else if (block.type === 'resource_link') text = `Resource link: ${(block as { uri?: string }).uri ?? ''}`
    else text = `[${block.type} content of the prompt, not included]`
    return labelled ? `${message.role === 'user' ? 'User' : 'Assistant'}: ${text}` : text
  })
  return parts.join('\n\n')
}

/**
 * The `/mcp__<server>__<prompt>` command of one prompt: it fills the prompt's arguments from the
 * command line, gets the prompt and sends its text as the human message of a turn.
 */
export function promptCommand(
  connection: {
    name: string
    getPrompt(name: string, args: Record<string, string>, signal?: AbortSignal): Promise<GetPromptResult>
  },
  prompt: Prompt,
  name: string,
  logger: Logger,
): Command {
  const description = (prompt.description ?? prompt.title ?? '').replace(/\s+/g, ' ').trim()
  const usage = promptUsage(prompt)
  return {
    name,
    description: `MCP prompt of "${connection.name}"${description ? `: ${description.length > 120 ? `${description.slice(0, 117)}...` : description}` : ''}`,
    ...(usage ? { usage } : {}),
    run: async (args, context) => {
      const values = promptArguments(prompt, args, name)
      const result = await connection.getPrompt(prompt.name, values, context.signal)
      const text = promptText(result)
      if (!text.trim()) throw new Error(`the prompt "${prompt.name}" of MCP server "${connection.name}" is empty`)
      void context.agent
        .send(text)
        .catch((error: Error) => logger.warn('/%s: the turn failed: %s', name, error.message))
      return `Running the MCP prompt "${prompt.name}" of "${connection.name}".`
    },
  }
}
