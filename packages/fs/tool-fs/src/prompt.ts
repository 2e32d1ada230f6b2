// The system prompt section this tool contributes: when to use the tool, not how (the tool's own
// description covers the mechanics). Registered through `ctx.systemPrompt` when that service is
// present, and removed with this plugin. A deployment can replace or drop it with the
// system-prompt row's `sections: { 'tool:fs': ... }`.
import type { Context } from 'cordis'
import { contributeSection } from '@dsh/system-prompt'

export const PROMPT_SECTION = {
  id: 'tool:fs',
  order: 310,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['read', 'write', 'edit'],
  text: [
    'Files (read, write, edit):',
    '- read a file before you edit or overwrite it; a change to a file you have not read, or that changed since you read it, is refused: read it again.',
    '- Use edit for a change to part of a file (old_string copied exactly, with enough context to be unique); use write only for new files or full rewrites.',
    '- The line numbers and tab in read output are not file content; never put them in old_string.',
    '- For a large file, read the range you need with offset and limit.',
  ].join('\n'),
}

/** Adds `PROMPT_SECTION` whenever a system prompt service is available; a no-op otherwise. */
export function registerPromptSection(ctx: Context): void {
  contributeSection(ctx, PROMPT_SECTION)
}
