// The runner row of this bundle before it moved: kept so a patch naming
// `@dsh/bundle-headless/runner` still loads the same plugin. The code is @dsh/headless-runner.
export * from '@dsh/headless-runner'
