export declare const DEFAULT_PROFILE: string
export interface LauncherArgs {
  action: 'help' | 'version' | 'run' | 'error'
  profile: string
  profileGiven: boolean
  patches: string[]
  dumpConfig: boolean
  appArgs: string[]
  error?: string
}
export declare function parseLauncherArgs(argv: readonly string[]): LauncherArgs
export declare function launcherHelp(version: string): string
