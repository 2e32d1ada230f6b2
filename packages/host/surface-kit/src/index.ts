// @dsh/surface-kit: what every face (headless, TUI, web host, ACP, SDK server) decides the same way,
// written once. Each face keeps its own error shape (UsageError, ApiError, RpcError, ACP's
// RequestError) and maps the kit's coded errors onto it; the decisions themselves live here.
export { chooseModel, ModelChoiceError, modelChoiceUsage, type ModelChoiceCode } from './model.ts'
export {
  continuable,
  latestContinuable,
  openSession,
  resumeStored,
  SessionOpenError,
  sessionOpenError,
  type SessionOpenCode,
} from './open.ts'
export { PendingAnswers, type AnswerOutcome, type AnswerWait } from './answers.ts'
export { foldSessionRow, humanPromptOf, sessionRowOf, type SessionRow } from './rows.ts'
export { appExit, ExitCode, type AppExit } from './exit.ts'
export { formatAge, sessionTable, type SessionTableRow } from './age.ts'
export {
  parseFaceArgs,
  SHARED_FLAGS,
  sharedOptions,
  UsageError,
  type FaceArgs,
  type SharedOptions,
} from './args.ts'
