// @dsh/sdk-protocol: the wire contract of `dsh-jsonrpc-agent` (newline-delimited JSON-RPC 2.0 on
// stdio) shared by the server and the clients. Not a Cordis plugin: types, constants, framing.
export * from './wire.ts'
export {
  ConnectionError,
  encodeFrame,
  JsonRpcConnection,
  LineDecoder,
  RpcError,
  type ConnectionOptions,
} from './connection.ts'
