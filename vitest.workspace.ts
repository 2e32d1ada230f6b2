// The test projects: one per package family directory so `vitest --project core` narrows a run.
// Every project runs TypeScript sources directly (no build step).
import { readdirSync, existsSync } from 'node:fs'

const families = readdirSync(new URL('./packages/', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort()

export const projects = [
  ...families.map((family) => ({
    // Inherit the root config (timeouts, worker pool); projects do not by default.
    extends: true,
    test: {
      name: family,
      include: [`packages/${family}/*/test/**/*.test.ts`],
    },
  })),
  ...(existsSync(new URL('./bundles/', import.meta.url))
    ? [{ extends: true, test: { name: 'bundles', include: ['bundles/*/test/**/*.test.ts'] } }]
    : []),
  // The plugin cookbook of docs/plugins.md: every recipe is tested like a package.
  ...(existsSync(new URL('./examples/cookbook/', import.meta.url))
    ? [{ extends: true, test: { name: 'cookbook', include: ['examples/cookbook/*/test/**/*.test.ts'] } }]
    : []),
]

export default projects
