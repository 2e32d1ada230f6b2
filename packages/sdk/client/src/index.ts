// @dsh/sdk-client: drive dsh agents from TypeScript through a `dsh-jsonrpc-agent` subprocess.
export {
  Harness,
  HarnessError,
  HarnessSession,
  type ApprovalHandler,
  type HarnessExit,
  type HarnessOptions,
  type PromptResult,
  type SessionListener,
  type StatusListener,
  type SubagentListener,
  type SubagentNotification,
  type TurnStream,
} from './harness.ts'
export {
  PROTOCOL_VERSION,
  type ApprovalDecision,
  type ApprovalRequestedNotification,
  type SessionInfo,
  type SessionStatus,
  type SessionStatusNotification,
  type SubagentFinishedNotification,
  type SubagentStartedNotification,
  type WireApprovalRequest,
  type WireEvent,
  type WireModel,
  type WireTurnResult,
} from '@dsh/sdk-protocol'
