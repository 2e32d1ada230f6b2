// @dsh/acp: an Agent Client Protocol server (agent side) over the dsh spine. Mount it as a row;
// with `stdio: true` it serves the process's stdin/stdout once the app is ready.
import { AcpServer } from './server.ts'

export { AcpServer, Config, type LiveSession } from './server.ts'
export { claimStdout, stdioStreams, type FrameWriter } from './stdio.ts'
export { DEFAULT_MAX_MESSAGE_BYTES, guardFrames, wrongVersionReply, type FrameGuardOptions } from './framing.ts'
export {
  DEFAULT_TOOL_KINDS,
  diffHunks,
  planEntries,
  promptToBlocks,
  PromptContentError,
  stopReason,
  toolLocations,
  toolTitle,
  Translator,
  type CapturedDiff,
  type PromptOptions,
  type ToolKind,
  type TranslatorOptions,
} from './translate.ts'

declare module 'cordis' {
  interface Context {
    acp: AcpServer
  }
}

export default AcpServer
