// The file-mention method of the web host (browser-safe): fuzzy search of a session's workspace
// files, respecting .gitignore.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export interface FileMatch {
  path: string
}

export const filesSearch = defineMethod('files.search', {
  description:
    "Workspace files of a session's directory matching `query` (fuzzy), best first; files ignored by .gitignore and hidden files are not listed.",
  params: Schema.object({
    sessionId: Schema.string().min(1).required(),
    query: Schema.string().default(''),
    limit: Schema.natural().min(1).max(200).default(30),
  }),
  result: Schema.object({
    files: Schema.array(Schema.object({ path: Schema.string().required() })).required(),
    /** The listing stopped at maxFiles: some files were not considered. */
    truncated: Schema.boolean().required(),
  }) as Schema<{ files: FileMatch[]; truncated: boolean }>,
})
