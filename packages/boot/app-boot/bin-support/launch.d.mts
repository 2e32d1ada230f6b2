export function dshHome(env?: NodeJS.ProcessEnv): string
export function runsSources(): boolean
export function respawnOnSourcesIfDev(bin: string | URL, argv: readonly string[]): Promise<void>
export function enableCompileCache(): Promise<void>
export function quietClosedPipes(name: string): void
export function launch(spec: {
  name: string
  bin: string | URL
  argv: readonly string[]
  run: () => Promise<number>
}): Promise<void>
