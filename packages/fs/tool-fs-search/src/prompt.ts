// The system prompt section this tool contributes: when to use the tool, not how (the tool's own
// description covers the mechanics). Registered through `ctx.systemPrompt` when that service is
// present, and removed with this plugin. A deployment can replace or drop it with the
// system-prompt row's `sections: { 'tool:fs-search': ... }`.
import type { Context } from 'cordis'
import { contributeSection } from '@dsh/system-prompt'

export const PROMPT_SECTION = {
  id: 'tool:fs-search',
  order: 320,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['glob', 'grep'],
  text: [
    'Search (glob, grep):',
    '- Prefer them to find, grep or rg in bash (bounded results, .gitignore honoured), then read only the files or ranges that matter.',
  ].join('\n'),
}

/** Adds `PROMPT_SECTION` whenever a system prompt service is available; a no-op otherwise. */
export function registerPromptSection(ctx: Context): void {
  contributeSection(ctx, PROMPT_SECTION)
}
