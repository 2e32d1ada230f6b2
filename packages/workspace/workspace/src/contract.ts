// The workspaces.* methods: params and result schemas shared by the host and any client.
// Browser-safe: imports only schemastery and @dsh/web-protocol.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

/** A workspace as the wire and `ctx.workspaces` show it. Lists are in the user's order. */
export interface WireWorkspace {
  id: string
  name: string
  /** Absolute, normalized directory path on the host. */
  path: string
  /** Milliseconds since the epoch. */
  createdAt: number
  /**
   * Where its sessions' commands and files live (`local`, `e2b`, ...), when chosen; absent: the
   * host's default world (`dsh web --world NAME`).
   */
  world?: string
}

/** A world a workspace may choose (`workspaces.worlds`). */
export interface WireWorld {
  name: string
  /** One line for the picker. */
  description: string
}

export const MAX_WORKSPACE_NAME = 200

export const WorkspaceSchema: Schema<WireWorkspace> = Schema.object({
  id: Schema.string().required(),
  name: Schema.string().required(),
  path: Schema.string().required(),
  createdAt: Schema.natural().required(),
  world: Schema.string(),
})

// Fresh schema objects per use: schemastery's modifiers mutate the schema they are called on.
const id = () => Schema.string().required().description('A workspace id from workspaces.list.')
const name = () =>
  Schema.string().description(`A display name, 1-${MAX_WORKSPACE_NAME} characters, no control characters.`)

export const workspacesList = defineMethod('workspaces.list', {
  description: 'Every workspace, in the user order.',
  params: Schema.object({}),
  result: Schema.object({ workspaces: Schema.array(WorkspaceSchema) }),
})

export const workspacesCreate = defineMethod('workspaces.create', {
  description:
    'Adds a workspace for an existing directory; a directory already added returns its workspace (created: false).',
  params: Schema.object({
    path: Schema.string()
      .required()
      .description('An absolute directory path on the host (a leading ~ is the home directory).'),
    name: name(),
    world: Schema.string().description(
      'Where its sessions run: a name from workspaces.worlds (default: the host default world).',
    ),
  }),
  result: Schema.object({ workspace: WorkspaceSchema, created: Schema.boolean().required() }),
})

export const workspacesWorlds = defineMethod('workspaces.worlds', {
  description: "The worlds a workspace can choose (this host's own machine first) and the host's default.",
  params: Schema.object({}),
  result: Schema.object({
    worlds: Schema.array(
      Schema.object({ name: Schema.string().required(), description: Schema.string().required() }),
    ).required(),
    default: Schema.string().required(),
  }) as unknown as Schema<{ worlds: WireWorld[]; default: string }>,
})

export const workspacesRename = defineMethod('workspaces.rename', {
  description: 'Changes a workspace display name.',
  params: Schema.object({ id: id(), name: name().required() }),
  result: Schema.object({ workspace: WorkspaceSchema }),
})

export const workspacesReorder = defineMethod('workspaces.reorder', {
  description: 'Puts the given ids first, in that order; workspaces not named keep their relative order after them.',
  params: Schema.object({ ids: Schema.array(Schema.string()).required() }),
  result: Schema.object({ workspaces: Schema.array(WorkspaceSchema) }),
})

export const workspacesRemove = defineMethod('workspaces.remove', {
  description: 'Forgets a workspace. Its directory and sessions are untouched.',
  params: Schema.object({ id: id() }),
  result: Schema.object({ workspace: WorkspaceSchema }),
})

// The change a session's world holds for its folder (the e2b world: the sandbox of that workspace),
// offered for approval from the web's side panel. Served by @dsh/workspace-worlds when a host
// chooses worlds per workspace; defined here, beside `workspaces.worlds`, as the wire of that choice.
/** One change offered for approval: the patch a session's world made to its folder. */
export interface WireWorldReview {
  /** The sandbox (or other machine) it was made in. */
  sandboxId: string
  /** The local patch file. */
  file: string
  /** The paths it touches, relative to `dir`. */
  files: string[]
  /** The local folder it applies to: the session's workspace folder, never another. */
  dir: string
  /** The patch text (cut at 64 KB; the file holds all of it). */
  patch: string
}

const sessionId = () => Schema.string().min(1).required().description('A session of this host.')
const Settled = Schema.object({
  ok: Schema.boolean().required(),
  line: Schema.string().required(),
}) as unknown as Schema<{
  ok: boolean
  line: string
}>

export const worldsReview = defineMethod('worlds.review', {
  description:
    "The change the session's world made to its workspace folder since the last review, saved as a patch file (null: a local session, no sandbox yet, or no change).",
  params: Schema.object({ sessionId: sessionId() }),
  result: Schema.object({ review: Schema.any() }) as unknown as Schema<{ review: WireWorldReview | null }>,
})
export const worldsApply = defineMethod('worlds.apply', {
  description:
    "Applies the session's reviewed patch to its workspace folder (git apply, checked first: all or nothing).",
  params: Schema.object({ sessionId: sessionId(), file: Schema.string().min(1).required() }),
  result: Settled,
})
export const worldsKeep = defineMethod('worlds.keep', {
  description: "Declines the session's reviewed patch: its folder is left as it is and the patch file stays.",
  params: Schema.object({ sessionId: sessionId(), file: Schema.string().min(1).required() }),
  result: Settled,
})

export const workspaceMethods = [
  workspacesList,
  workspacesCreate,
  workspacesRename,
  workspacesReorder,
  workspacesRemove,
  workspacesWorlds,
] as const

/** The host-stream payload published after every change. `workspaces` is the whole new list. */
export interface WorkspaceChangedEvent {
  type: 'workspace/changed'
  reason: 'created' | 'renamed' | 'reordered' | 'removed'
  /** The workspace the change is about (absent for a reorder). */
  workspace?: WireWorkspace
  workspaces: WireWorkspace[]
}
