// A plugin for non-interactive surfaces (headless): registers an approval answerer that decides
// every request by the session's preset policy instead of asking a human.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { DEFAULT_POLICY_HINT, policyAnswerer } from '@dsh/user-approval'
import type {} from './service.ts'

export const name = 'permission-presets-answerer'
export const inject = ['approval', 'permissionPresets']

export interface PresetAnswererConfig {
  /** Appended to the rejection reason when the policy needs a human. */
  hint: string
}

export const Config: Schema<PresetAnswererConfig> = Schema.object({
  hint: Schema.string()
    .default(DEFAULT_POLICY_HINT)
    .description('Appended to the rejection reason when the policy needs a human.'),
})

export function apply(ctx: Context, config: PresetAnswererConfig) {
  ctx.approval.registerAnswerer(
    policyAnswerer((request) => ctx.permissionPresets.policyFor(request.sessionId), {
      name: 'permission-preset-policy',
      hint: config.hint,
    }),
  )
}
