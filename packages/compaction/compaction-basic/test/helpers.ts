import type { Context } from 'cordis'
import type { LlmRequest } from '@dsh/llm'
import type { ScriptedStep } from '@dsh/agent-loop-testkit'

/** A `read` tool returning `size` characters of numbered lines for any path. */
export const readTool = (size: number) => ({
  name: 'read-tool',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register({
      name: 'read',
      description: 'reads a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      concurrencySafe: true,
      execute: (args: { path: string }) => {
        let text = ''
        for (let line = 0; text.length < size; line++)
          text += `${args.path}:${line}: const value${line} = compute(${line});\n`
        return { content: text.slice(0, size) }
      },
    })
  },
})

export const isCompactionRequest = (request: LlmRequest) => request.metadata?.purpose === 'compaction'

/** Estimated prompt tokens of a request, as the provider would roughly count it. */
export const requestTokens = (request: LlmRequest) =>
  Math.ceil(
    ((request.system ?? '').length +
      JSON.stringify(request.tools ?? []).length +
      JSON.stringify(request.messages).length) /
      4,
  )

/**
 * A script that reads `reads` files (one per step), then answers `final`, and answers every
 * compaction request with `summary(request)`. Usage reports the request's size, like a provider.
 */
export function readingScript(options: {
  reads: number
  final?: string
  summary?: (request: LlmRequest) => ScriptedStep
  agentStep?: (request: LlmRequest, n: number) => ScriptedStep | undefined
}) {
  let agentSteps = 0
  const entry = (request: LlmRequest): ScriptedStep => {
    const usage = { input: requestTokens(request), output: 20 }
    if (isCompactionRequest(request)) {
      return {
        usage,
        ...(options.summary?.(request) ?? {
          text: 'Summary: the user asked to read files; files read so far were all TypeScript.',
        }),
      }
    }
    const n = agentSteps++
    const custom = options.agentStep?.(request, n)
    if (custom) return { usage, ...custom }
    if (n < options.reads) return { usage, toolCalls: [{ name: 'read', arguments: { path: `src/file${n}.ts` } }] }
    return { usage, text: options.final ?? 'all files read' }
  }
  return Array.from({ length: options.reads * 3 + 20 }, () => entry)
}
