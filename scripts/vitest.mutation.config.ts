// The vitest config that `pnpm mutation <package>` (scripts/mutation.mjs) hands to Stryker: only the
// test files of the package under mutation, with the root config's timeouts. No global setup: it
// would rebuild dist/ and the browser client inside every Stryker sandbox, and a mutant is tested
// through the package's sources, which the tests import directly.
// End-to-end and browser tests are left out: they start the real bins or the built client, which
// Stryker's node_modules link resolves to the original tree's dist/, so they never see a mutant.
import { defineConfig } from 'vitest/config'

const pkg = process.env.DSH_MUTATION_PACKAGE
if (!pkg)
  throw new Error(
    'vitest.mutation.config.ts: DSH_MUTATION_PACKAGE is not set (run it through `pnpm mutation <package>`)',
  )

export default defineConfig({
  test: {
    // `pnpm mutation <package> --tests <glob>` narrows the files (globs relative to the package).
    include: process.env.DSH_MUTATION_TESTS
      ? (JSON.parse(process.env.DSH_MUTATION_TESTS) as string[]).map((glob) => `${pkg}/${glob}`)
      : [`${pkg}/test/**/*.test.ts`],
    exclude: ['**/node_modules/**', '**/*.e2e.test.ts', '**/*.browser.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    expect: { poll: { timeout: 10_000 } },
    reporters: ['default'],
  },
})
