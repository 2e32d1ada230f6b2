// @dsh/workspace: `ctx.workspaces`, the user's workspaces (host directories with a name and an
// order) kept in a storage domain; with `ctx.api` mounted, the workspaces.* methods and the
// `workspace/changed` host-stream event.
import type { Context } from 'cordis'
import type { ApiGatewayLike } from './api.ts'
import { registerWorkspaceApi } from './api.ts'
import { WorkspaceService } from './service.ts'

export * from './contract.ts'
export {
  WorkspaceService,
  Config,
  normalizeWorkspacePath,
  StoredWorkspaceSchema,
  WORKSPACE_DOMAIN,
  LOCAL_WORLD,
  type Workspace,
  type WorkspaceId,
  type StoredWorkspace,
  type WorkspaceServiceConfig,
} from './service.ts'
export { registerWorkspaceApi, type ApiGatewayLike } from './api.ts'
/** The error of the workspace wire, for the world plugins that serve its methods (@dsh/workspace-worlds). */
export { ApiError } from '@dsh/web-protocol'

export const name = 'workspace'

/** The service plus its optional API face: methods and host events appear whenever `ctx.api` is there. */
export class Workspaces extends WorkspaceService {
  constructor(ctx: Context, config: ConstructorParameters<typeof WorkspaceService>[1]) {
    super(ctx, config)
    ctx.inject(['api'], (inner) => {
      registerWorkspaceApi(inner, (inner as unknown as { api: ApiGatewayLike }).api, this)
    })
  }
}

export default Workspaces
