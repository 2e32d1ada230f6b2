// @dsh/workspace-worlds/export: hands one world's four seams to `ctx.worlds`. Its row is mounted
// with the same isolated names as that world's provider rows (e.g. `isolate: {subprocess: world-e2b,
// fs: world-e2b, shell: world-e2b, sandbox: world-e2b}`), so it sees exactly those providers, and
// `ctx.worlds` (not isolated) is the host's router. `folders: e2b` gives the world one sandbox per
// folder through `ctx.e2b.within` (the e2b world); without it the world has one state for all.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { WorldOffer } from './index.ts'

export interface ExportConfig {
  /** The world's name, as workspaces choose it (`local`, `e2b`). */
  world: string
  /** One line for the workspace picker. */
  description: string
  /** `e2b`: each folder gets its own sandbox through `ctx.e2b.within`. */
  folders?: 'e2b'
}

export const Config: Schema<ExportConfig> = Schema.object({
  world: Schema.string()
    .pattern(/^[a-z][a-z0-9-]{0,31}$/)
    .required(),
  description: Schema.string().required(),
  folders: Schema.union(['e2b']),
}) as unknown as Schema<ExportConfig>

export const name = 'workspace-worlds-export'
export const inject = ['worlds', 'subprocess', 'fs', 'shell', 'sandbox']

/** The part of `ctx.e2b` used here (`within` runs a call with the sandbox of one folder). */
interface FolderScoped {
  within?<T>(dir: string, fn: () => T): T
  offer?(dir: string): Promise<WorldOffer | undefined>
  readonly leased?: boolean
}

export function apply(ctx: Context, config: ExportConfig): void {
  const services = { subprocess: ctx.subprocess, fs: ctx.fs, shell: ctx.shell, sandbox: ctx.sandbox }
  if (config.folders !== 'e2b') {
    ctx.effect(() => ctx.worlds.provide({ name: config.world, description: config.description, services }))
    return
  }
  ctx.inject(['e2b'], (inner) => {
    const e2b = inner.get('e2b') as FolderScoped | undefined
    inner.effect(() =>
      inner.worlds.provide({
        name: config.world,
        description: config.description,
        services,
        // Without `within` (an older @dsh/e2b) every folder shares the run's one sandbox.
        enter: (folder, fn) => (e2b?.within ? e2b.within(folder, fn) : fn()),
        // The sandbox's change to that folder, applied to it only (`e2b.offer`).
        ...(e2b?.offer ? { offer: (folder: string) => e2b.offer!(folder) } : {}),
        // A subagent child in its own sandbox (`world: "e2b"`) stays in this world.
        claims: () => e2b?.leased === true,
      }),
    )
  })
}

export default { name, inject, Config, apply }
