// The API face of ctx.workspaces: registers the workspaces.* contracts on a gateway and forwards
// `workspace/changed` to its host stream. Everything registered is an effect of `ctx`.
import type { Context } from 'cordis'
import type { MethodContract } from '@dsh/web-protocol'
import type { WorkspaceService } from './service.ts'
import {
  workspacesCreate,
  workspacesList,
  workspacesRemove,
  workspacesRename,
  workspacesReorder,
  workspacesWorlds,
} from './contract.ts'

/**
 * The part of `ctx.api` (@dsh/api-gateway) this package uses. Declared here rather than imported:
 * @dsh/workspace is a seam definition (the definitions floor), and the gateway is a surface; the
 * floors (`definitions-import-only-definitions` in .dependency-cruiser.cjs, which counts type-only
 * imports) forbid the import. The gateway's `ctx.api` satisfies it structurally, and
 * `Workspaces` passes `ctx.api` only when the gateway row is mounted (`ctx.inject(['api'])`).
 */
export interface ApiGatewayLike {
  register<P, R>(
    contract: MethodContract<P, R>,
    handler: (params: P, call: { loopback: boolean; signal: AbortSignal }) => R | Promise<R>,
  ): () => void
  publishHost(event: { type: string; [key: string]: unknown }): void
}

export function registerWorkspaceApi(ctx: Context, api: ApiGatewayLike, service: WorkspaceService): void {
  const workspaces = () => service
  api.register(workspacesList, async () => ({ workspaces: await workspaces().list() }))
  api.register(workspacesCreate, (params) => workspaces().create(params))
  api.register(workspacesRename, async ({ id, name }) => ({ workspace: await workspaces().rename(id, name) }))
  api.register(workspacesReorder, async ({ ids }) => ({ workspaces: await workspaces().reorder(ids) }))
  api.register(workspacesRemove, async ({ id }) => ({ workspace: await workspaces().remove(id) }))
  api.register(workspacesWorlds, () => workspaces().worlds())
  ctx.on('workspace/changed', (event) => api.publishHost({ ...event }))
}
