// @dsh/tool-cordis: five model-facing tools over `ctx.dynamicCordisRunner`: define a small plugin,
// run it (the user approves first), call its handlers, list what is defined, retract one. Without
// a runner row this plugin never activates (the runner is in `inject`).
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import type { Definition } from '@dsh/cordis-host-runner'
import { RunnerError } from '@dsh/cordis-host-runner'

export const name = 'tool-cordis'
export const inject = ['tools', 'dynamicCordisRunner']

export interface Config {
  maxResultChars: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  maxResultChars: Schema.natural()
    .min(100)
    .default(20000)
    .description('Longest handler result (JSON characters) put into a tool result; the rest is cut.'),
}) as Schema<Partial<Config>, Config>

function fail(code: string, message: string): ToolOutput {
  return { content: `Error [${code}]: ${message}`, isError: true, error: { code, message } }
}

function failure(error: unknown): ToolOutput {
  if (error instanceof RunnerError) return fail(error.code, error.message)
  throw error
}

function brief(d: Readonly<Definition>): string {
  const all = [...d.handlers, ...d.browserHandlers.map((h) => `${h} (browser)`)]
  const handlers = all.length ? ` handlers: ${all.join(', ')}` : ''
  const browser = d.browserState
    ? ` browser half: ${d.browserState}${d.browserError ? ` (${d.browserError})` : ''}`
    : ''
  const error = d.state === 'failed' && d.error ? ` (last run failed: ${d.error})` : ''
  return `- ${d.name} [${d.state}] ${d.description}${handlers}${browser}${error}`
}

const CODE_HELP =
  'The code is the body of `function (dsh) { ... }`, run in an isolated JavaScript context with no require, ' +
  'process, timers or network. It talks to dsh only through `dsh`: `dsh.handle(name, fn)` registers a handler ' +
  '(fn receives the JSON input and returns a JSON value or a promise of one), `dsh.log(...values)` records a line ' +
  'shown by cordis_list, `await dsh.exec(command)` runs a bash command confined like the bash tool and resolves ' +
  '{exitCode, status, output}, and `dsh.onDispose(fn)` runs fn when the plugin is retracted. The body may be async ' +
  '(return a promise); the plugin is running once it settles.'

const BROWSER_HELP =
  'Optional `browser`: a second body of `function (dsh) { ... }` for the browser half, run in an isolated frame ' +
  'shown in the side panel of the session in dsh web (no network, no storage, no access to the page). There ' +
  '`dsh.root` is the element to render into, `dsh.log(...values)` and `dsh.handle(name, fn)` work as above ' +
  '(cordis_invoke reaches a browser handler through the open page). Leave `code` empty for a browser-only plugin.'

export function apply(ctx: Context, config: Config): void {
  const runner = ctx.dynamicCordisRunner
  const list = (call: ToolCallContext) => {
    const mine = runner.list(call.sessionId)
    return mine.length ? mine.map(brief).join('\n') : 'No plugins are defined in this session.'
  }

  ctx.tools.register<{ name: string; description: string; code: string; browser?: string }>({
    name: 'cordis_define',
    description:
      'Define (or replace) a small dsh plugin by name. Defining does not run it; call cordis_run next, which asks ' +
      `the user. ${CODE_HELP} ${BROWSER_HELP}`,
    parameters: {
      type: 'object',
      properties: {
        name: {
          type: 'string',
          description: 'Lowercase letters, digits and "-", starting with a letter (at most 40).',
        },
        description: { type: 'string', description: 'One sentence for the user: what the plugin does.' },
        code: { type: 'string', description: 'The JavaScript body described above (the host half).' },
        browser: { type: 'string', description: 'The browser half, when the plugin shows something in dsh web.' },
      },
      required: ['name', 'description', 'code'],
      additionalProperties: false,
    },
    execute(args, call) {
      try {
        const d = runner.define({ ...args, sessionId: call.sessionId, cwd: call.cwd })
        const browser = d.browser ? ` and a browser half (${Buffer.byteLength(d.browser)} bytes)` : ''
        return {
          content: `Defined ${d.name} (${Buffer.byteLength(d.code)} bytes${browser}). Call cordis_run with name "${d.name}" to start it.`,
          meta: { name: d.name, hash: d.hash },
        }
      } catch (error) {
        return failure(error)
      }
    },
  })

  ctx.tools.register<{ name: string }>({
    name: 'cordis_run',
    description:
      'Start a defined plugin. The user is asked first; if they refuse, say so and do not retry the same code. ' +
      'Returns the handlers it registered.',
    parameters: {
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
      additionalProperties: false,
    },
    async execute(args, call) {
      try {
        const d = await runner.run(args.name, {
          sessionId: call.sessionId,
          agentId: call.agentId,
          callId: call.callId,
          signal: call.signal,
        })
        const handlers = d.handlers.length ? d.handlers.join(', ') : 'none'
        const browser = d.browser ? ' Its browser half was handed to the open pages of this session.' : ''
        return {
          content: `${d.name} is running. Handlers: ${handlers}.${browser}`,
          meta: { name: d.name, handlers: d.handlers },
        }
      } catch (error) {
        return failure(error)
      }
    },
  })

  ctx.tools.register<{ name: string; handler: string; input?: unknown }>({
    name: 'cordis_invoke',
    description: 'Call a handler of a running plugin with a JSON input; returns its JSON result.',
    parameters: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'The plugin.' },
        handler: { type: 'string', description: 'A name the plugin passed to dsh.handle.' },
        input: { description: 'Any JSON value (default null).' },
      },
      required: ['name', 'handler'],
      additionalProperties: false,
    },
    async execute(args, call) {
      try {
        const value = await runner.invoke(args.name, args.handler, args.input ?? null, call.sessionId)
        let text = JSON.stringify(value)
        if (text.length > config.maxResultChars)
          text = `${text.slice(0, config.maxResultChars)}\n[... result cut at ${config.maxResultChars} characters]`
        return { content: text }
      } catch (error) {
        return failure(error)
      }
    },
  })

  ctx.tools.register<Record<string, never>>({
    name: 'cordis_list',
    description: "List this session's plugins: state, handlers and the last lines they logged.",
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    concurrencySafe: true,
    execute(_args, call) {
      const mine = runner.list(call.sessionId)
      const logs = mine
        .filter((d) => d.log.length)
        .map((d) => `${d.name} log:\n${d.log.map((l) => `  ${l}`).join('\n')}`)
      return { content: [list(call), ...logs].join('\n') }
    },
  })

  ctx.tools.register<{ name: string }>({
    name: 'cordis_retract',
    description: 'Stop a plugin (its dsh.onDispose callbacks run) and forget its definition.',
    parameters: {
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
      additionalProperties: false,
    },
    async execute(args, call) {
      try {
        await runner.retract(args.name, 'retracted', call.sessionId)
        return { content: `Retracted ${args.name}.` }
      } catch (error) {
        return failure(error)
      }
    },
  })
}
