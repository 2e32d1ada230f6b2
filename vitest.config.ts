import { defineConfig } from 'vitest/config'
import { projects } from './vitest.workspace.ts'

export default defineConfig({
  test: {
    projects,
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
