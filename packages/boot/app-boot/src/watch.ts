// Hot reload for long-lived hosts: watch the user's layer files, re-compose on a change and hand
// the new rows to the running tree. A one-shot never starts this.
import { existsSync, watch, type FSWatcher } from 'node:fs'
import { basename, dirname, resolve } from 'node:path'
import type { BootedTree, BootFailure, ReloadReport } from './boot.ts'
import { DshUserError, type Composition } from '@dsh/app-compose'

export interface WatchOptions {
  /** Files whose edits re-compose the tree (missing ones are picked up when they appear). */
  files: readonly string[]
  /** Builds the composition from the files as they are now; a DshUserError is a bad edit. */
  recompose(): Composition
  /** One line per outcome, without a trailing newline (the host prefixes nothing). */
  report(line: string): void
  /** Quiet period after the last file event before re-composing (default 150 ms). */
  debounceMs?: number
  /** Program name prefixing each line (default `dsh`). */
  name?: string
  /**
   * Re-compose once right away (default false): an edit made between the composition the tree
   * booted from and the start of watching is otherwise missed. A composition with no change is a no-op.
   */
  catchUp?: boolean
}

export interface LayerWatcher {
  close(): void
  /** Resolves once no reload is pending or running (tests, shutdown). */
  idle(): Promise<void>
}

/** `row hello (dsh-plugin-hello) in /h/profiles/web/cordis.patch.yml: invalid config: ...` */
function describe(f: BootFailure, comp: Composition): string {
  const row = comp.rows.find((r) => r.row.id === f.id)
  const label = row?.layers[row.layers.length - 1]
  const file = comp.layers.findLast((l) => l.label === label)?.file
  return `row ${f.id} (${f.name})${file ? ` in ${file}` : ''}: ${f.cause}`
}

/**
 * Watches the directories of `files` (so an editor's save-by-rename is seen) and reloads `tree`
 * after each quiet period. An edit that does not parse, compose or come up is reported in one
 * line and the tree keeps its last good rows; the next edit is tried again from scratch.
 */
export function watchLayers(tree: Pick<BootedTree, 'reload'>, opts: WatchOptions): LayerWatcher {
  const name = opts.name ?? 'dsh'
  const wanted = new Map<string, Set<string>>()
  for (const file of opts.files) {
    const abs = resolve(file)
    const dir = dirname(abs)
    if (!wanted.has(dir)) wanted.set(dir, new Set())
    wanted.get(dir)!.add(basename(abs))
  }
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> = Promise.resolve()
  let dirty = false
  let closed = false
  const reloadOnce = async () => {
    let comp: Composition
    try {
      comp = opts.recompose()
    } catch (error) {
      if (!(error instanceof DshUserError)) throw error
      opts.report(`${name}: reload refused: ${error.message.replace(/^dsh: /, '')}; keeping the running tree`)
      return
    }
    let result: ReloadReport
    try {
      result = await tree.reload(comp)
    } catch (error) {
      opts.report(`${name}: reload failed: ${(error as Error)?.message ?? error}; keeping the running tree`)
      return
    }
    if (result.message) return
    if (!result.ok) {
      opts.report(
        `${name}: reload refused: ${result.failures.map((f) => describe(f, comp)).join('; ')}; keeping the running tree`,
      )
      return
    }
    const parts = [
      result.changed.length ? `changed ${result.changed.join(', ')}` : '',
      result.added.length ? `added ${result.added.join(', ')}` : '',
      result.removed.length ? `removed ${result.removed.join(', ')}` : '',
    ].filter(Boolean)
    if (parts.length) opts.report(`${name}: reloaded: ${parts.join('; ')}`)
    for (const w of comp.warnings) opts.report(`${name}: warning: ${w}`)
  }
  const kick = () => {
    if (closed) return
    clearTimeout(timer)
    timer = setTimeout(() => {
      dirty = true
      running = running.then(async () => {
        if (!dirty || closed) return
        dirty = false
        await reloadOnce().catch((error) =>
          opts.report(`${name}: reload failed: ${(error as Error)?.message ?? error}`),
        )
      })
    }, opts.debounceMs ?? 150)
    timer.unref?.()
  }
  const watchers: FSWatcher[] = []
  for (const [dir, names] of wanted) {
    if (!existsSync(dir)) continue
    try {
      const w = watch(dir, { persistent: false }, (_event, file) => {
        if (file === null || names.has(String(file))) kick()
      })
      w.on('error', () => w.close())
      watchers.push(w)
    } catch {
      // An unwatchable directory (permissions, too many watches) only costs hot reload there.
    }
  }
  if (opts.catchUp) kick()
  return {
    close() {
      closed = true
      clearTimeout(timer)
      for (const w of watchers) w.close()
    },
    async idle() {
      let seen: Promise<void>
      do {
        seen = running
        await seen
      } while (seen !== running)
    },
  }
}
