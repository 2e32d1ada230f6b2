// @dsh/plan-mode: logged, per-session plan collaboration state (`ctx.planMode`).
//
// While a session is in plan mode its agents see a plan section in the system prompt and an
// `exit_plan_mode` tool, and tools outside the read-only allow list are refused with a reason.
// The model ends plan mode by proposing its plan through `exit_plan_mode`; the human reviews it
// (through `ctx.userQuestions`), or, with nobody to ask, the configured policy decides and the
// tool result says so. The state is the last `plan/mode` event of the session log, so a resumed
// session is in the mode it was left in.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type { PreExecutePayload, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import type {} from '@dsh/system-prompt'
import type {} from '@dsh/commands'
import type {} from '@dsh/user-questions'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/user-approval'
import type {} from '@dsh/session-persistence'
import { PLAN_SECTION_ID, PLAN_SECTION_TEXT, EXIT_TOOL_DESCRIPTION } from './text.ts'

export { PLAN_SECTION_ID, PLAN_SECTION_TEXT } from './text.ts'

/** Who changed the state: the `/plan` command (or an API call), a human review, or the no-human policy. */
export type PlanModeChangeBy = 'command' | 'review' | 'policy'

export interface PlanModeEvent {
  active: boolean
  by: PlanModeChangeBy
  /** The approved plan (on leaving through a review or the policy). */
  plan?: string
  /** The human's words that came with the approval. */
  feedback?: string
  /** Permission preset the session was switched to with the approval. */
  permission?: string
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** Plan mode entered (`active: true`) or left. The last one is the session's state. */
    'plan/mode': PlanModeEvent
  }
}

declare module 'cordis' {
  interface Context {
    planMode: PlanMode
  }
  interface Events {
    /** After a `plan/mode` event was logged. */
    'plan-mode/changed'(session: Session, state: PlanModeEvent): void
  }
}

/** Whether a session is in plan mode: its last `plan/mode` event. */
export function planModeActive(session: Pick<Session, 'last'>): boolean {
  return session.last('plan/mode')?.data.active === true
}

export type NoHumanPolicy = 'approve' | 'keep-planning'

export interface PlanModeConfig {
  allowTools: string[]
  noHuman: NoHumanPolicy
  approveMode: string
  guidance: string
  policyAnswerers: string[]
}

/** Read-only tools of the base bundle (and the ones later packages add) that run while planning. */
export const DEFAULT_ALLOWED_TOOLS = [
  'read',
  'read_image',
  'glob',
  'grep',
  'lsp',
  'todo_write',
  'ask_user_question',
  'skill',
  'job_output',
  'job_list',
  'list_agents',
  'web_fetch',
  'web_search',
  'session_search',
  'session_read',
  'get_goal',
  'schedule_list',
  // Code Mode's entry tool: every tool call of its program goes through this gate on its own.
  'run_code',
  // Only adds deferred schemas to the request (@dsh/tool-deferral); each loaded tool is gated itself.
  'load_tools',
]

const APPROVE = 'Approve'
const KEEP = 'Keep planning'
const approveAndSwitch = (mode: string) => `Approve and switch to ${mode}`

export class PlanMode extends Service {
  static Config: Schema<PlanModeConfig> = Schema.object({
    allowTools: Schema.array(Schema.string())
      .default(DEFAULT_ALLOWED_TOOLS)
      .description('Tools that run while planning; every other tool is refused.'),
    noHuman: Schema.union(['approve', 'keep-planning'] as const)
      .default('approve')
      .description(
        'What happens to a proposed plan when nobody can review it (headless): approve it, or tell the model to keep planning.',
      ),
    approveMode: Schema.string()
      .default('danger-full-access')
      .description(
        'Permission preset offered as "Approve and switch to ..." (needs the permission-presets row; "" hides the choice).',
      ),
    guidance: Schema.string()
      .default(PLAN_SECTION_TEXT)
      .description('The system-prompt section the model reads while planning.'),
    policyAnswerers: Schema.array(Schema.string())
      .default(['permission-preset-policy'])
      .description(
        'Approval answerers that decide by policy, not as a human: their answer to a plan review is ignored and `noHuman` decides.',
      ),
  })

  static inject = ['sessions', 'tools', 'agents']

  // Shared by caller views of the service (mutated in place, never reassigned).
  private readonly mounted = new Map<Agent, () => void>()
  private readonly reviewing = new Set<string>()
  private readonly allowed: ReadonlySet<string>

  constructor(
    ctx: Context,
    public readonly config: PlanModeConfig,
  ) {
    super(ctx, 'planMode')
    this.allowed = new Set([...config.allowTools, 'exit_plan_mode'])
    ctx.inject(['sessionPersistence'], (inner) => {
      inner.sessionPersistence.registerEventType('plan/mode')
    })
    ctx.on('agent/created', (agent) => this.sync(agent))
    // Agents that exist already (this row loaded or reloaded into a running host) get their state too.
    for (const agent of ctx.agents.list()) this.sync(agent)
    ctx.on('agent/disposed', (agent) => this.unmount(agent))
    ctx.effect(
      () => () => {
        for (const agent of [...this.mounted.keys()]) this.unmount(agent)
      },
      'plan-mode:agents',
    )
    ctx.on(
      'tools/pre-execute',
      async (payload: PreExecutePayload, next) => {
        const session = this.sessionOf(payload.context)
        if (session && planModeActive(session) && !this.allowed.has(payload.tool.name)) {
          payload.decision = {
            code: 'PLAN_MODE',
            deny:
              `plan mode is on, and "${payload.tool.name}" can change things. Only read-only tools run while planning. ` +
              'Finish investigating, then call exit_plan_mode with your plan; once the human approves it you can make changes.',
          }
          return
        }
        return next()
      },
      { prepend: true },
    )
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'plan',
        description: 'Plan before changing anything: /plan [message] enters plan mode, /plan off leaves it.',
        usage: '[message | off]',
        run: (args, { agent, session }) => {
          const text = args.trim()
          if (text === 'off') {
            if (!planModeActive(session)) return 'Plan mode is not on.'
            this.set(session, { active: false, by: 'command' })
            return 'Plan mode is off.'
          }
          const was = planModeActive(session)
          if (!was) this.set(session, { active: true, by: 'command' })
          if (text !== '') void agent.send(text).catch(() => {})
          return was
            ? 'Plan mode is already on.'
            : 'Plan mode is on: the agent investigates and proposes a plan before changing anything (/plan off leaves).'
        },
      })
    })
  }

  /** The session a tool call belongs to: its agent's, else the store's by id. */
  private sessionOf(call: { agentId?: string; sessionId?: string }): Session | undefined {
    const agent = call.agentId !== undefined ? this.ctx.agents.get(call.agentId) : undefined
    return agent?.session ?? (call.sessionId !== undefined ? this.ctx.sessions.get(call.sessionId) : undefined)
  }

  /** Whether the session (by id or object) is in plan mode. */
  isActive(session: Session | string): boolean {
    const found = typeof session === 'string' ? this.ctx.sessions.get(session) : session
    return found ? planModeActive(found) : false
  }

  /** Whether a plan review of this session is waiting for an answer. */
  reviewPending(sessionId: string): boolean {
    return this.reviewing.has(sessionId)
  }

  /** Enters plan mode (no-op when already on). */
  enter(session: Session): void {
    if (!planModeActive(session)) this.set(session, { active: true, by: 'command' })
  }

  /** Leaves plan mode (no-op when off). */
  leave(session: Session): void {
    if (planModeActive(session)) this.set(session, { active: false, by: 'command' })
  }

  private set(session: Session, state: PlanModeEvent): void {
    session.append('plan/mode', state)
    for (const agent of this.ctx.agents.list()) if (agent.session === session) this.sync(agent)
    this.ctx.emit('plan-mode/changed', session, state)
  }

  /** Registers or removes the agent's plan section and exit tool to match its session's state. */
  private sync(agent: Agent): void {
    const active = planModeActive(agent.session)
    if (active && !this.mounted.has(agent)) this.mounted.set(agent, this.mount(agent))
    else if (!active) this.unmount(agent)
  }

  private unmount(agent: Agent): void {
    const dispose = this.mounted.get(agent)
    this.mounted.delete(agent)
    dispose?.()
  }

  private mount(agent: Agent): () => void {
    const disposers: Array<() => void> = []
    const prompt = this.ctx.get('systemPrompt')
    if (prompt)
      disposers.push(
        prompt.registerSection({
          id: PLAN_SECTION_ID,
          order: 50,
          stable: false,
          text: this.config.guidance,
          scope: agent.scope,
        }),
      )
    disposers.push(
      this.ctx.tools.register<{ plan: string }>({
        name: 'exit_plan_mode',
        description: EXIT_TOOL_DESCRIPTION,
        scope: agent.scope,
        parameters: {
          type: 'object',
          properties: {
            plan: {
              type: 'string',
              description: 'The plan, in Markdown: the steps you will take and the files you will change.',
            },
          },
          required: ['plan'],
          additionalProperties: false,
        },
        execute: (args, call) => this.review(agent, args.plan, call.signal, call.callId),
      }),
    )
    return () => {
      for (const dispose of disposers.splice(0)) dispose()
    }
  }

  private async review(agent: Agent, plan: string, signal: AbortSignal, callId: string): Promise<ToolOutput> {
    const session = agent.session
    if (plan.trim() === '')
      return fail('EMPTY_PLAN', 'the plan is empty. Call exit_plan_mode again with the plan written out in Markdown.')
    if (!planModeActive(session))
      return fail('NOT_IN_PLAN_MODE', 'plan mode is not on, so there is nothing to exit. Go ahead with the task.')
    if (this.reviewing.has(session.id)) {
      return fail(
        'REVIEW_PENDING',
        "your previous plan is still waiting for the human's review. Wait for that answer instead of proposing another plan.",
      )
    }
    this.reviewing.add(session.id)
    try {
      const questions = this.ctx.get('userQuestions')
      const presets = this.ctx.get('permissionPresets')
      const switchTo =
        this.config.approveMode !== '' && presets?.get(this.config.approveMode) ? this.config.approveMode : undefined
      if (questions?.available(session.id)) {
        const options = [{ label: APPROVE, description: 'Leave plan mode and carry out the plan.' }]
        if (switchTo)
          options.push({
            label: approveAndSwitch(switchTo),
            description: `Leave plan mode and switch the permission mode to ${switchTo}.`,
          })
        options.push({ label: KEEP, description: 'Stay in plan mode; add what should change.' })
        const outcome = await questions.ask(
          [
            {
              id: 'plan',
              header: 'Plan',
              question: `The agent proposes this plan:\n\n${plan}\n\nApprove it?`,
              options,
            },
          ],
          { sessionId: session.id, agentId: agent.id, callId, signal },
        )
        if (outcome.status === 'answered') {
          const answer = outcome.answers.plan
          const picked = answer?.selected[0]
          const feedback = answer?.text?.trim() || undefined
          if (picked === APPROVE || (switchTo && picked === approveAndSwitch(switchTo))) {
            const permission = picked === APPROVE ? undefined : switchTo
            if (permission) presets!.set(session.id, permission)
            this.set(session, {
              active: false,
              by: 'review',
              plan,
              ...(feedback ? { feedback } : {}),
              ...(permission ? { permission } : {}),
            })
            return {
              content:
                `The human approved your plan${permission ? ` and switched the permission mode to ${permission}` : ''}. ` +
                `Plan mode is off: carry out the plan now.${feedback ? `\nTheir note: ${feedback}` : ''}`,
              meta: { decision: 'approved', ...(permission ? { permission } : {}) },
            }
          }
          return {
            content:
              'The human did not approve the plan yet; you are still in plan mode. ' +
              (feedback ? `Their feedback: ${feedback}\n` : 'They gave no reason. ') +
              'Revise the plan (ask with ask_user_question if something is unclear), then call exit_plan_mode again.',
            meta: { decision: 'keep-planning' },
          }
        }
        if (outcome.status === 'cancelled')
          return fail('CANCELLED', `the plan review was cancelled (${outcome.reason}); plan mode is still on.`)
        // unavailable: nobody could answer after all; the policy decides below.
      } else if (this.ctx.get('approval')) {
        // A surface with approvals but no questions (ACP): a yes/no permission request.
        const outcome = await this.ctx.get('approval')!.request(
          {
            sessionId: session.id,
            agentId: agent.id,
            callId,
            kind: 'plan',
            title: 'Approve the plan and leave plan mode',
            detail: plan,
            action: { plan },
            options: ['allowed-once', 'rejected'],
          },
          { signal },
        )
        const human = outcome.answeredBy === undefined || !this.config.policyAnswerers.includes(outcome.answeredBy)
        if (outcome.decision === 'cancelled')
          return fail(
            'CANCELLED',
            `the plan review was cancelled (${outcome.reason ?? 'turn cancelled'}); plan mode is still on.`,
          )
        if (human && (outcome.decision === 'allowed-once' || outcome.decision === 'allowed-always')) {
          const feedback = outcome.message?.trim() || undefined
          this.set(session, { active: false, by: 'review', plan, ...(feedback ? { feedback } : {}) })
          return {
            content: `The human approved your plan. Plan mode is off: carry out the plan now.${feedback ? `\nTheir note: ${feedback}` : ''}`,
            meta: { decision: 'approved' },
          }
        }
        if (human && outcome.decision === 'rejected') {
          const feedback = outcome.message?.trim()
          return {
            content:
              'The human did not approve the plan yet; you are still in plan mode. ' +
              (feedback ? `Their feedback: ${feedback}\n` : 'They gave no reason. ') +
              'Revise the plan (ask with ask_user_question if something is unclear), then call exit_plan_mode again.',
            meta: { decision: 'keep-planning' },
          }
        }
        // unavailable, or a policy answered: the plan-mode policy decides below.
      }
      if (this.config.noHuman === 'approve') {
        this.set(session, { active: false, by: 'policy', plan })
        return {
          content:
            "No human is connected to review the plan, so it was approved by this deployment's policy (plan-mode noHuman: approve). " +
            'Plan mode is off: carry out the plan now.',
          meta: { decision: 'approved', by: 'policy' },
        }
      }
      return {
        content:
          "No human is connected to review the plan, and this deployment's policy (plan-mode noHuman: keep-planning) does not approve plans by itself. " +
          'You stay in plan mode: report the plan as your answer and stop.',
        meta: { decision: 'keep-planning', by: 'policy' },
      }
    } finally {
      this.reviewing.delete(session.id)
    }
  }
}

export const name = 'plan-mode'
export default PlanMode
