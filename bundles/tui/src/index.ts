// The terminal UI row of this bundle before it moved: kept so a patch naming `@dsh/bundle-tui/app`
// still loads the same plugin. The code is @dsh/tui-app.
export * from '@dsh/tui-app'
