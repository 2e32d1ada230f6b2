// `@dsh/acp/client-fs`: the sandboxed local filesystem provider of `ctx.fs` (@dsh/fs-sandbox: every
// mutation fenced by the session's sandbox mode), except that inside a file tool call of an ACP
// session whose client advertised `fs.readTextFile` / `fs.writeTextFile`, file contents are read
// from and written through the client (so unsaved editor buffers are what the model reads, and the
// editor sees every write). Stat, list, mkdir and remove stay local. The fence runs before the
// write is routed, so a write the mode forbids never reaches the editor either.
import { SandboxedFileSystem } from '@dsh/fs-sandbox'
import type { CommitOptions, FileStat } from '@dsh/fs'
import { clientFsRoute } from './client-route.ts'

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: false })

export class AcpClientFileSystem extends SandboxedFileSystem {
  protected override async readBytes(path: string, signal?: AbortSignal): Promise<Uint8Array> {
    const route = clientFsRoute.getStore()
    if (route?.read) return encoder.encode(await route.read(path))
    return super.readBytes(path, signal)
  }

  protected override async commitBytes(path: string, data: Uint8Array, options: CommitOptions): Promise<FileStat> {
    const route = clientFsRoute.getStore()
    if (!route?.write) return super.commitBytes(path, data, options)
    await route.write(path, decoder.decode(data))
    // The client owns the write; what the provider reports is the file as it now stands locally,
    // or (an editor that keeps the change in a buffer) the previous stat with the new size.
    const stat = await this.statPath(path)
    if (stat) return stat
    return { kind: 'file', size: data.byteLength, mtimeMs: Date.now(), mode: options.mode ?? 0o644 }
  }
}

export const name = 'acp-client-fs'
export default AcpClientFileSystem
