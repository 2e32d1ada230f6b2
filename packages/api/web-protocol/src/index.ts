// @dsh/web-protocol: the typed contract between the dsh web host and its clients. Browser-safe:
// it imports nothing from node and depends only on schemastery.
export * from './contract.ts'
export * from './sessions.ts'
export * from './streams.ts'
