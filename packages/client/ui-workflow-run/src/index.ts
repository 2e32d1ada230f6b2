// @dsh/ui-workflow-run (host half): empty on purpose. The row makes the host serve the browser
// half (`./client`), which renders `workflow` and `ralph` tool calls as live run cards folded from
// the session's `tool-workflow/*` events.
export * from './model.ts'

export const name = '@dsh/ui-workflow-run'
export function apply(): void {}
