// A scripted model that answers per agent, for tests with several agents (subagents, forks). Each
// agent's requests are counted on their own, and the agent's script is chosen by the text of its
// first user message (the task), so parallel children get the right answers whatever order their
// requests arrive in.
import type { LlmRequest } from '@dsh/llm'
import type { ScriptEntry, ScriptedStep } from './scripted-model.ts'

export type AgentScript = (step: number, request: LlmRequest) => ScriptedStep

export function firstUserText(request: LlmRequest): string {
  for (const message of request.messages) {
    if (message.role !== 'user') continue
    const content = message.content
    return typeof content === 'string' ? content : content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  }
  return ''
}

export function lastUserText(request: LlmRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]
    if (message.role !== 'user') continue
    const content = message.content
    return typeof content === 'string' ? content : content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  }
  return ''
}

/**
 * `scripts` maps a substring of an agent's task to its script; the first match wins. `count`
 * entries are produced (the testkit consumes one per request).
 */
export function router(scripts: Array<[string, AgentScript]>, count = 200): ScriptEntry[] {
  const steps = new Map<string, number>()
  const route = (request: LlmRequest): ScriptedStep => {
    const agent = String(request.metadata?.agentId ?? '')
    const step = steps.get(agent) ?? 0
    steps.set(agent, step + 1)
    // A fork child's first user message is the parent's: match on the newest task instead.
    const task = `${firstUserText(request)}\n${lastUserText(request)}`
    for (const [key, script] of scripts) if (task.includes(key)) return script(step, request)
    return { text: `no script for task ${JSON.stringify(firstUserText(request).slice(0, 60))}` }
  }
  return Array.from({ length: count }, () => (request: LlmRequest) => route(request))
}
