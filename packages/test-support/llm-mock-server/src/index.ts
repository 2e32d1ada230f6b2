export * from './script.ts'
export * from './server.ts'
