// The system prompt section this tool contributes: when to use the tool, not how (the tool's own
// description covers the mechanics). Registered through `ctx.systemPrompt` when that service is
// present, and removed with this plugin. A deployment can replace or drop it with the
// system-prompt row's `sections: { 'tool:todo': ... }`.
import type { Context } from 'cordis'
import { contributeSection } from '@dsh/system-prompt'

export const PROMPT_SECTION = {
  id: 'tool:todo',
  order: 330,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['todo_write'],
  text: [
    'Task list (todo_write):',
    '- For work with three or more distinct steps, write the list before you start and keep it current: one item in_progress at a time, mark an item completed as soon as it is done.',
    '- Skip it for simple one-step requests.',
  ].join('\n'),
}

/** Adds `PROMPT_SECTION` whenever a system prompt service is available; a no-op otherwise. */
export function registerPromptSection(ctx: Context): void {
  contributeSection(ctx, PROMPT_SECTION)
}
