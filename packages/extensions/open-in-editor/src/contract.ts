// The host method of @dsh/open-in-editor (browser-safe: no node imports). `host.openPath` opens a
// host path in the user's editor on the host's desktop, so it is loopback-only: a page reached
// over the network (a trusted host name, a remote bind) is refused with 403 FORBIDDEN.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export interface OpenPathResult {
  /** The path opened (absolute). */
  path: string
  /** The editor's program name (`code`, `vim`, ...). */
  editor: string
  /** True when the editor was still running when the host answered (it waits `waitMs` at most). */
  running: boolean
}

export const hostOpenPath = defineMethod('host.openPath', {
  description:
    "Opens an absolute host path (a workspace folder or a file, at a line) in the user's editor on the host: the open-in-editor row's editor, else $VISUAL, else $EDITOR. Loopback callers only.",
  loopbackOnly: true,
  params: Schema.object({
    path: Schema.string().min(1).max(4096).required().description('An absolute path on the host.'),
    line: Schema.natural().min(1).description('A line of a file (ignored for a folder).'),
  }) as Schema<{ path: string; line?: number }>,
  result: Schema.object({
    path: Schema.string().required(),
    editor: Schema.string().required(),
    running: Schema.boolean().required(),
  }) as Schema<OpenPathResult>,
})
