// @dsh/client-web on the node side: where the built app is. The app itself is the browser
// entry src/main.tsx, built by scripts/build-client.mjs into dist-web/.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The built app directory (holds index.html once `node scripts/build-client.mjs` ran). */
export const WEB_DIST = fileURLToPath(new URL('../dist-web/', import.meta.url))

export const isBuilt = (): boolean => existsSync(WEB_DIST + 'index.html')
