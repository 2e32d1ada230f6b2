// ACP session modes: the permission presets (when a presets row is mounted) plus `plan` (when a
// plan-mode row is too). Reads the optional services at each call, so a row mounted or unmounted
// later is seen.
import * as acp from '@agentclientprotocol/sdk'
import type { Context } from 'cordis'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/plan-mode'
import { errorText, type LiveSession } from './live.ts'

/** The ACP session mode that stands for plan mode. */
export const PLAN_MODE_ID = 'plan'

/** `plan` while the session plans (a plan-mode row is mounted), else its permission preset. */
export function currentMode(ctx: Context, sessionId: string): string | undefined {
  if (ctx.get('planMode')?.isActive(sessionId)) return PLAN_MODE_ID
  return ctx.get('permissionPresets')?.current(sessionId).name
}

/**
 * Session modes are the permission presets, when a presets row is mounted, plus `plan` when a
 * plan-mode row is too (without presets there would be no mode to leave plan mode for).
 */
export function sessionModes(ctx: Context, sessionId: string): acp.SessionModeState | undefined {
  const presets = ctx.get('permissionPresets')
  if (!presets) return undefined
  const availableModes: acp.SessionMode[] = presets
    .list()
    .map((p) => ({ id: p.name, name: p.name, description: p.description }))
  if (ctx.get('planMode'))
    availableModes.push({
      id: PLAN_MODE_ID,
      name: 'plan',
      description: 'Plan mode: investigate and propose a plan; nothing changes until you approve it.',
    })
  return { currentModeId: currentMode(ctx, sessionId) ?? presets.current(sessionId).name, availableModes }
}

/** `session/set_mode`: `plan` enters plan mode; a preset name selects it and leaves plan mode. */
export function setMode(ctx: Context, live: LiveSession, modeId: string): acp.SetSessionModeResponse {
  const presets = ctx.get('permissionPresets')
  const plan = ctx.get('planMode')
  const session = live.agent.session
  if (!presets) throw acp.RequestError.methodNotFound('session/set_mode')
  if (modeId === PLAN_MODE_ID && plan) {
    plan.enter(session)
    return {}
  }
  try {
    presets.set(live.id, modeId)
  } catch (error) {
    throw acp.RequestError.invalidParams({ modeId }, errorText(error))
  }
  // Choosing a permission mode leaves plan mode.
  if (plan?.isActive(session)) plan.leave(session)
  return {}
}
