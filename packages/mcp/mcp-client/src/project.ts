// The project's `.mcp.json` as a project-trust request: what `dsh trust` lists for this row and
// what the row gates its project servers with (the same items).
import { resolve } from 'node:path'
import type { ProjectTrustRequests, TrustRequest } from '@dsh/project-trust'
import { projectTrustItems, readProjectFile } from './config.ts'

/** The project-trust source id of `.mcp.json` servers. */
export const TRUST_SOURCE = 'mcp'

export function projectRequest(dir: string): { request: TrustRequest; table: unknown; path: string; problem?: string } {
  const project = readProjectFile(dir)
  return {
    request: {
      source: TRUST_SOURCE,
      label: 'MCP servers',
      dir,
      items: projectTrustItems(project.table, '.mcp.json', dir),
    },
    table: project.table,
    path: project.path,
    ...(project.problem ? { problem: project.problem } : {}),
  }
}

/** What this row would start from the project of `cwd` (for `dsh trust`; the same items the row gates with). */
export const projectTrustRequests: ProjectTrustRequests = (config, cwd) => {
  if (config?.projectFile === false) return []
  const dir = typeof config?.cwd === 'string' && config.cwd !== '' ? resolve(cwd, config.cwd) : cwd
  return [projectRequest(dir).request]
}
