// The config schema of the e2b world's service (`E2bService.Config`).
import Schema from 'schemastery'
import type { E2bConfig } from './types.ts'

export const E2bConfigSchema: Schema<Partial<E2bConfig>, E2bConfig> = Schema.object({
  template: Schema.string().default('base').description('Template or alias new sandboxes start from.'),
  timeoutMs: Schema.natural()
    .min(1000)
    .default(600_000)
    .description('Sandbox lifetime in ms, extended while the run uses it.'),
  metadata: Schema.dict(String).default({}).description('Metadata attached to each sandbox this run creates.'),
  domain: Schema.string().description('E2B domain (default: E2B_DOMAIN, else e2b.app).'),
  apiUrl: Schema.string().description('Control-plane URL (default: E2B_API_URL, else derived from the domain).'),
  sandboxUrl: Schema.string().description('envd URL (default: E2B_SANDBOX_URL, else per-sandbox hosts).'),
  requestTimeoutMs: Schema.natural().min(100).default(30_000).description('Timeout of one request to E2B.'),
  cwd: Schema.string().description('Remote working directory (default: the local working directory path).'),
  retries: Schema.natural()
    .max(10)
    .default(2)
    .description('Retries of a control-plane call (create, connect, kill, pause) answered 429 or 5xx.'),
  retryDelayMs: Schema.natural().default(500).description('First retry delay in ms (doubles each retry).'),
  onExit: Schema.union(['kill', 'pause', 'keep'])
    .default('kill')
    .description('What happens to the sandboxes this run created when it ends.'),
  onLost: Schema.union(['recreate', 'stop'])
    .default('recreate')
    .description('After a sandbox is found gone: create a new one on next use, or stop.'),
  sandboxId: Schema.string().description('Reconnect to this sandbox instead of creating one.'),
  upload: Schema.object({
    enabled: Schema.boolean()
      .default(true)
      .description('Copy the local working tree (per .gitignore) into a new sandbox.'),
    from: Schema.string().description('Local directory uploaded (default: the process working directory).'),
    maxBytes: Schema.natural()
      .default(100 << 20)
      .description('Largest tree uploaded, in bytes of file content.'),
    exclude: Schema.array(String).default([]).description('More gitignore-style patterns to leave out.'),
  }).default({ enabled: true, maxBytes: 100 << 20, exclude: [] } as E2bConfig['upload'] as never),
  idle: Schema.object({
    afterMs: Schema.natural()
      .default(0)
      .description('Pause or kill a sandbox after this long without a call or a running command (0: never).'),
    action: Schema.union(['pause', 'kill']).default('pause').description('What an idle sandbox gets.'),
  }).default({ afterMs: 0, action: 'pause' } as E2bConfig['idle'] as never),
  patch: Schema.object({
    enabled: Schema.boolean()
      .default(true)
      .description('Save the change a created sandbox made as a patch at the end of the run.'),
    dir: Schema.string().description('Directory of saved patches (default: $DSH_HOME/e2b-patches).'),
  }).default({ enabled: true } as E2bConfig['patch'] as never),
})
