import { DshUserError } from '@dsh/app-boot'

/** A user-facing failure of a `dsh plugin` command: one line, exit 1 (or 2 for a usage error). */
export class PluginError extends DshUserError {
  override name = 'PluginError'
}
