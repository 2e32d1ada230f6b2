// @dsh/credentials-local: the `ctx.credentials` provider over four local layers, highest first:
// the inherited environment, the project `.env`, `$DSH_HOME/.env`, `$DSH_HOME/.credentials.yaml` (0600).
export { LocalCredentials, Config, resolvePaths, type LocalCredentialsConfig, type ResolvedPaths } from './local.ts'
import { LocalCredentials } from './local.ts'

export const name = 'credentials-local'
export default LocalCredentials
