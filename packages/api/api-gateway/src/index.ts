// @dsh/api-gateway: `ctx.api` (typed methods from @dsh/web-protocol contracts, validated), the
// HTTP carrier under /api/ (on ctx.webServer when mounted), the SSE downlinks, and the session
// host that serves the session methods for many sessions of one process.
import { ApiGateway } from './gateway.ts'

export {
  ApiGateway,
  readJsonBody,
  sendJson,
  type ApiGatewayConfig,
  type CallInfo,
  type MethodHandler,
  type RequestInfo,
  type SessionStreams,
  type StreamClient,
} from './gateway.ts'
export { SessionHost, type SessionHostConfig } from './host.ts'
export { FrameLog, SseClient } from './sse.ts'
export { ApiError, defineMethod } from '@dsh/web-protocol'

export default ApiGateway
