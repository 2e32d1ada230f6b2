// The vitest config that `pnpm mutation <package>` (scripts/mutation.mjs) hands to Stryker: only the
// test files of the package under mutation, with the root config's timeouts. No global setup: it
// would rebuild dist/ and the browser client inside every Stryker sandbox, and a mutant is tested
// through the package's sources, which the tests import directly.
import { defineConfig } from 'vitest/config'

const pkg = process.env.DSH_MUTATION_PACKAGE
if (!pkg) throw new Error('vitest.mutation.config.ts: DSH_MUTATION_PACKAGE is not set (run it through `pnpm mutation <package>`)')

export default defineConfig({
  test: {
    include: [`${pkg}/test/**/*.test.ts`],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    expect: { poll: { timeout: 10_000 } },
    reporters: ['default'],
  },
})
