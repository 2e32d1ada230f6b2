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
    reporters: ['default'],
  },
})
