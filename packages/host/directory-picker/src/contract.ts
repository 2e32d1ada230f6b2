// host.listDirectory / host.createDirectory: the browse backend's methods. Loopback-only: they
// reveal and change the host's file system. Browser-safe: imports only schemastery and web-protocol.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export type DirectoryEntryKind = 'directory' | 'file' | 'other'

export interface DirectoryEntry {
  name: string
  /** Absolute path of the entry. */
  path: string
  /** What the entry is after following a symlink (a dangling link is `other`). */
  kind: DirectoryEntryKind
  hidden: boolean
  symlink: boolean
}

export interface DirectoryListing {
  /** The absolute, normalized directory listed. */
  path: string
  /** Its parent, `null` at the file-system root. */
  parent: string | null
  /** Directories first, then the rest; each group by name (case-insensitive, numbers in order). */
  entries: DirectoryEntry[]
  /** More entries exist than were returned (see `total`). */
  truncated: boolean
  /** Entries that matched (hidden ones only with `showHidden`); a lower bound when the scan cap was hit. */
  total: number
}

const EntrySchema: Schema<DirectoryEntry> = Schema.object({
  name: Schema.string().required(),
  path: Schema.string().required(),
  kind: Schema.union(['directory', 'file', 'other']).required(),
  hidden: Schema.boolean().required(),
  symlink: Schema.boolean().required(),
}) as Schema<DirectoryEntry>

export const hostListDirectory = defineMethod('host.listDirectory', {
  description: 'Lists one directory level of the host: directories first, hidden entries on request, a bounded count.',
  loopbackOnly: true,
  params: Schema.object({
    path: Schema.string().description(
      'Absolute directory path (a leading ~ is the home directory). Default: the home directory.',
    ),
    showHidden: Schema.boolean().default(false).description('Include names starting with a dot.'),
    directoriesOnly: Schema.boolean().default(false).description('Leave files out.'),
    limit: Schema.natural().min(1).description('Most entries returned; capped by the host config.'),
  }),
  result: Schema.object({
    path: Schema.string().required(),
    parent: Schema.union([Schema.string(), Schema.const(null)]),
    entries: Schema.array(EntrySchema),
    truncated: Schema.boolean().required(),
    total: Schema.natural().required(),
  }) as Schema<DirectoryListing>,
})

export const hostCreateDirectory = defineMethod('host.createDirectory', {
  description: 'Creates one child directory (not intermediate ones) and returns its path.',
  loopbackOnly: true,
  params: Schema.object({
    parent: Schema.string().required().description('Absolute path of an existing directory.'),
    name: Schema.string().required().description('The new directory name: one path segment.'),
  }),
  result: Schema.object({ path: Schema.string().required() }),
})

export const directoryPickerMethods = [hostListDirectory, hostCreateDirectory] as const
