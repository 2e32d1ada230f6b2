// The e2b world's methods of the web host (browser-safe: no node imports). A web session's change
// in the sandbox is reviewed on the user's action or when a turn ends (`e2b.review`), then either
// applied to the local tree (`e2b.apply`, the same checked `git apply` as `--apply`) or kept as a
// patch file (`e2b.keep`); both move the sandbox's baseline past the reviewed change, so it is not
// offered twice. A change made after the review stays for the next one.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

/** One change offered for approval. */
export interface E2bReview {
  /** The sandbox it was made in. */
  sandboxId: string
  /** The local patch file (saved under `$DSH_HOME/e2b-patches`). */
  file: string
  /** The paths it touches, relative to the tree. */
  files: string[]
  /** The local tree it applies to. */
  dir: string
  /** The patch text (cut at 64 KB; the file holds all of it). */
  patch: string
}

export interface E2bSettled {
  ok: boolean
  /** One sentence for the user. */
  line: string
}

const File = Schema.object({ file: Schema.string().min(1).required() }) as unknown as Schema<{ file: string }>
const Settled = Schema.object({ ok: Schema.boolean(), line: Schema.string() }) as unknown as Schema<E2bSettled>

export const e2bReview = defineMethod('e2b.review', {
  params: Schema.object({}) as unknown as Schema<Record<string, never>>,
  result: Schema.object({ review: Schema.any() }) as unknown as Schema<{ review: E2bReview | null }>,
  description:
    "The change this host's E2B sandbox made since the last review, saved as a patch file (null: no sandbox yet, or no change).",
})
export const e2bApply = defineMethod('e2b.apply', {
  params: File,
  result: Settled,
  description: 'Applies a reviewed patch to the local tree (git apply, checked first: all or nothing).',
})
export const e2bKeep = defineMethod('e2b.keep', {
  params: File,
  result: Settled,
  description: 'Declines a reviewed patch: the local tree is left as it is and the patch file stays.',
})
