// @dsh/tools: the tool registry service (`ctx.tools`) and its guarded execution pipeline.
export { ToolRegistry, TOOL_NAME_PATTERN, type ToolRegistryConfig } from './registry.ts'
export * from './types.ts'
export { toolError } from './results.ts'
import { ToolRegistry } from './registry.ts'

export const name = 'tools'
export default ToolRegistry
