// Methods reached through `ctx.x` run with `this` bound to a per-caller shadow, and every property
// read there builds fresh proxies (Cordis' call tracing); the per-event paths (append, flush, the
// batch writer) read their own state and call their own helpers through the plain object instead.
export { plainService as unshadow } from '@dsh/plain-service'
