// Vocabulary of the `ctx.fs` provider contract and the `fs/*` events.

export type FileKind = 'file' | 'directory' | 'symlink' | 'other'

/** What a provider reports about one path (symlinks are followed by `stat`). */
export interface FileStat {
  kind: FileKind
  /** Bytes. */
  size: number
  /** Modification time, milliseconds since the epoch (fractional where the provider has it). */
  mtimeMs: number
  /** Permission bits (`mode & 0o7777`); undefined where the provider has no such notion. */
  mode?: number
}

export interface DirEntry {
  name: string
  /** Kind of the entry itself (a symlink is reported as `symlink`, not followed). */
  kind: FileKind
}

/** Options every call that may be observed or gated takes. */
export interface FsCallOptions {
  /**
   * The agent session this call acts for. Policies (fs-observation-policy) only act on calls that
   * carry a session; harness-internal calls without one are neither observed nor gated by them.
   */
  session?: string
  signal?: AbortSignal
}

export interface WriteOptions extends FsCallOptions {
  /** Create missing parent directories (default false). */
  createParents?: boolean
  /** Permission bits of a new file (default 0o666 minus the umask). Existing files keep theirs. */
  mode?: number
}

export interface WriteResult {
  path: string
  /** True when the file did not exist before the write. */
  created: boolean
  stat: FileStat
  /** sha256 hex of the bytes written. */
  hash: string
}

export interface ReadResult {
  path: string
  bytes: Uint8Array
  stat: FileStat
  /** sha256 hex of `bytes`. */
  hash: string
}

export interface ReadTextResult extends Omit<ReadResult, 'bytes'> {
  /** UTF-8 decoded; invalid sequences become U+FFFD. */
  text: string
}

/**
 * The transform of `edit`: receives the current text and returns the new text. Throwing aborts
 * the edit with nothing written (the error propagates to the caller unchanged).
 */
export type EditTransform = (current: string) => string

export interface EditResult extends WriteResult {
  before: string
  after: string
}

export interface RemoveOptions extends FsCallOptions {
  recursive?: boolean
  /** No error when the path does not exist. */
  force?: boolean
}

/** What is about to change. `create` is a write to a path that does not exist yet. */
export type FsMutationKind = 'write' | 'edit' | 'remove'

/** A refusal set by a `fs/before-write` listener. */
export interface FsDenial {
  /** Stable code, e.g. `FILE_NOT_READ`, `FILE_STALE`. */
  code: string
  /** A sentence the model can act on. */
  message: string
}

/**
 * Payload of the `fs/before-write` waterfall, run inside the path's critical section right before
 * the provider commits a mutation. To refuse, a listener sets `deny` and returns without calling
 * `next()`; the provider reads `deny` after the waterfall settles and throws `FsError(code)`.
 */
export interface FsBeforeWritePayload {
  /** Absolute, provider-resolved path. */
  readonly path: string
  readonly kind: FsMutationKind
  readonly session?: string
  /** The path's state right now; undefined when it does not exist. */
  readonly current?: FileStat
  /**
   * sha256 hex of the current content (undefined when absent or not a file). Lazy: an overwrite
   * only reads the old file when a listener asks. An edit answers from the text it already read.
   */
  currentHash(): Promise<string | undefined>
  deny?: FsDenial
}

/** Payload of the observe-only `fs/read` event, emitted after a successful content read. */
export interface FsReadEvent {
  path: string
  session?: string
  stat: FileStat
  hash: string
}

/** Payload of the observe-only `fs/wrote` event, emitted after a committed mutation. */
export interface FsWroteEvent {
  path: string
  kind: FsMutationKind
  session?: string
  /** Undefined after a remove. */
  stat?: FileStat
  hash?: string
  created: boolean
}

declare module 'cordis' {
  interface Context {
    fs: import('./filesystem.ts').FileSystem
  }
  interface Events {
    'fs/before-write'(payload: FsBeforeWritePayload, next: () => Promise<void>): Promise<void>
    'fs/read'(event: FsReadEvent): void
    'fs/wrote'(event: FsWroteEvent): void
  }
}
