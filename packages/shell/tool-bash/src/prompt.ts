// The system prompt section this tool contributes: when to use the tool, not how (the tool's own
// description covers the mechanics). Registered through `ctx.systemPrompt` when that service is
// present, and removed with this plugin. A deployment can replace or drop it with the
// system-prompt row's `sections: { 'tool:bash': ... }`.
import type { Context } from 'cordis'
import { contributeSection } from '@dsh/system-prompt'

export const PROMPT_SECTION = {
  id: 'tool:bash',
  order: 300,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['bash'],
  text: [
    'Shell (bash):',
    '- Use bash to run programs (builds, tests, linters, git, package managers); narrow long output (grep, head, tail, --quiet).',
    '- After changing code, run the relevant tests or checks if the project has them.',
  ].join('\n'),
}

/** Adds `PROMPT_SECTION` whenever a system prompt service is available; a no-op otherwise. */
export function registerPromptSection(ctx: Context): void {
  contributeSection(ctx, PROMPT_SECTION)
}
