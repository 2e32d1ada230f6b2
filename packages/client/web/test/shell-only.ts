// The shell's tests run it on its own: the conversation packages' rows (when the web bundle has
// them) are disabled, so the shell's fallback view and composer fill their seats. A patch naming
// a row that does not exist is only a warning.
export const SHELL_ONLY_PATCH = [
  'ui-conversation',
  'ui-tool',
  'ui-takeover',
  'ui-pickers',
  'ui-settings',
  'ui-model-selection',
  'ui-subagent',
]
  .map((id) => `- id: ${id}\n  disabled: true\n`)
  .join('')
