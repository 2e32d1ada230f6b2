// The system prompt section this tool contributes: when to use the tool, not how (the tool's own
// description covers the mechanics). Registered through `ctx.systemPrompt` when that service is
// present, and removed with this plugin. A deployment can replace or drop it with the
// system-prompt row's `sections: { 'tool:str-replace-editor': ... }`.
import type { Context } from 'cordis'
import { contributeSection } from '@dsh/system-prompt'

export const PROMPT_SECTION = {
  id: 'tool:str-replace-editor',
  order: 315,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['str_replace_editor'],
  text: [
    'Editor (str_replace_editor):',
    '- view a file before changing it, and again if it changed since.',
    '- str_replace needs old_str copied exactly from the file and unique in it; add surrounding lines until it is. Use create only for new files.',
  ].join('\n'),
}

/** Adds `PROMPT_SECTION` whenever a system prompt service is available; a no-op otherwise. */
export function registerPromptSection(ctx: Context): void {
  contributeSection(ctx, PROMPT_SECTION)
}
