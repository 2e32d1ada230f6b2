import { defineConfig } from 'vitest/config'

// One test project for the whole tree. A project per package family (57 of them) gave each family its
// own Vite server, so every workspace source a test imports was transformed again in each family that
// imported it; one project transforms it once and shares it between files (measured on 25 unit files
// across 20 families: Duration 26 s -> 21 s, transform 7.4 s -> 3.9 s; .agents/notes/test-runner-layout.md).
// Narrow a run with a path filter: `npx vitest run packages/sandbox/` (a family), a package or a file.
export default defineConfig({
  test: {
    include: [
      'packages/*/*/test/**/*.test.ts',
      'bundles/*/test/**/*.test.ts',
      // The plugin cookbook of docs/plugins.md: every recipe is tested like a package.
      'examples/cookbook/*/test/**/*.test.ts',
    ],
    globalSetup: ['./scripts/vitest-global-setup.ts'],
    // Two cores on CI: keep the worker pool small and predictable.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // expect.poll gives up after 1 s by default: too short for a browser round trip on a loaded
    // two-core machine (a settings test failed in CI that way). Calls that pass their own keep it.
    expect: { poll: { timeout: 10_000 } },
    reporters: ['default'],
  },
})
