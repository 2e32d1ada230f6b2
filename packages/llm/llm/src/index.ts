export * from './types.ts'
export * from './assembler.ts'
export * from './retry.ts'
export * from './redact.ts'
export { LlmService } from './service.ts'
import { LlmService } from './service.ts'

export default LlmService
