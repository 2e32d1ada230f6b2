// The system prompt section this tool contributes: when to use the tool, not how (the tool's own
// description covers the mechanics). Registered through `ctx.systemPrompt` when that service is
// present, and removed with this plugin. A deployment can replace or drop it with the
// system-prompt row's `sections: { 'tool:ask-user': ... }`.
import type { Context } from 'cordis'
import { contributeSection } from '@dsh/system-prompt'

export const PROMPT_SECTION = {
  id: 'tool:ask-user',
  order: 340,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['ask_user_question'],
  text: [
    'Questions (ask_user_question):',
    '- Ask only when the answer would change what you do and you cannot find it in the project: a real choice between options, or a missing requirement. Otherwise decide, and say what you assumed.',
  ].join('\n'),
}

/** Adds `PROMPT_SECTION` whenever a system prompt service is available; a no-op otherwise. */
export function registerPromptSection(ctx: Context): void {
  contributeSection(ctx, PROMPT_SECTION)
}
