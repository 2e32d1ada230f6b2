// The async-context channel between the ACP server and the client-delegating filesystem: while a
// file tool of an ACP session whose client advertised `fs.*` runs, the store holds that client's
// read/write functions. Kept on globalThis so every copy of this module shares one channel.
import { AsyncLocalStorage } from 'node:async_hooks'

export interface ClientFsRoute {
  /** `fs/read_text_file`: the editor's view of the file, unsaved changes included. */
  read?(path: string): Promise<string>
  /** `fs/write_text_file`: the editor writes (and tracks) the change. */
  write?(path: string, content: string): Promise<void>
}

const KEY = Symbol.for('dsh.acp.clientFsRoute')
const g = globalThis as { [KEY]?: AsyncLocalStorage<ClientFsRoute> }
export const clientFsRoute: AsyncLocalStorage<ClientFsRoute> = (g[KEY] ??= new AsyncLocalStorage<ClientFsRoute>())
