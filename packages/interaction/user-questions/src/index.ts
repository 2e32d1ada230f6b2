// @dsh/user-questions: `ctx.userQuestions`, the seam a tool or permission plugin uses to pause and
// ask the human. Channels (ACP, SDK, TUI, web) register answerers; no answerer means `unavailable`.
import { UserQuestionsService } from './service.ts'

export * from './types.ts'
export { UserQuestionsConfig, UserQuestionsService } from './service.ts'
export { checkAnswers, checkQuestions } from './validate.ts'

export default UserQuestionsService
