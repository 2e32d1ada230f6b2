// Test helper: answers each agent of a harness by the text of its task, counting that agent's own
// requests, so parallel children get their scripts whatever order their requests arrive in.
import type { LlmRequest } from '@dsh/llm'
import type { ScriptEntry, ScriptedStep } from '@dsh/agent-loop-testkit'

export type Script = (step: number, request: LlmRequest) => ScriptedStep

function taskOf(request: LlmRequest): string {
  const first = request.messages.find((m) => m.role === 'user')
  if (first?.role !== 'user') return ''
  return first.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
}

export function byTask(routes: Array<[string, Script]>, count = 300): ScriptEntry[] {
  const steps = new Map<string, number>()
  const answer = (request: LlmRequest): ScriptedStep => {
    const agent = String(request.metadata?.agentId ?? '')
    const step = steps.get(agent) ?? 0
    steps.set(agent, step + 1)
    const task = taskOf(request)
    for (const [key, script] of routes) if (task.includes(key)) return script(step, request)
    return { text: `no route for ${JSON.stringify(task.slice(0, 40))}` }
  }
  return Array.from({ length: count }, () => (request: LlmRequest) => answer(request))
}

export function toolText(request: LlmRequest, callId: string): string | undefined {
  const message = request.messages.find((m) => m.role === 'tool' && m.callId === callId)
  return message && message.role === 'tool'
    ? message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    : undefined
}
