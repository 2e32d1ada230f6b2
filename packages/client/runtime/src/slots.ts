// The slot registry (`ctx.slots`): named places in the page that plugins fill with React
// components. A registration is an effect of the registering plugin, so unloading the plugin takes
// its components out of the page. Keyed slots (`tool.call.toolview` keyed by tool name) hold
// entries per key; `<Slot>` renders them (see react.ts).
import { type Context, Service } from 'cordis'
import type { ComponentType } from 'react'

/**
 * Props of the named slots, by declaration merging:
 * `declare module '@dsh/client-runtime' { interface SlotProps { 'my.slot': { x: number } } }`.
 * Slots not named here take `Record<string, unknown>`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: the target of declaration merging (see above); a type alias cannot be merged into
export interface SlotProps {}

export type PropsOfSlot<N extends string> = N extends keyof SlotProps ? SlotProps[N] : Record<string, unknown>

export interface SlotEntry<P = any> {
  /** Unique within (slot, key): a second entry with the same id replaces nothing; it throws. */
  id: string
  /** Lower renders first (and wins a single seat). Default 0; ties keep registration order. */
  order?: number
  /** For keyed slots: the key this entry answers (e.g. a tool name). */
  key?: string
  component: ComponentType<P>
}

/** A registered entry as the registry keeps it. */
export interface SlotRecord<P = any> extends Required<Pick<SlotEntry<P>, 'id' | 'order' | 'component'>> {
  key?: string
  slot: string
  /** Registration sequence number (the tie-breaker). */
  serial: number
  /** Name of the plugin that registered it, when known (shown when it fails to render). */
  owner?: string
}

const SLOT_NAME = /^[a-z][A-Za-z0-9_-]*(\.[a-z][A-Za-z0-9_-]*)*$/

export class SlotRegistry extends Service {
  private readonly slots = new Map<string, SlotRecord[]>()
  private readonly listeners = new Map<string, Set<() => void>>()
  private serial = 0

  constructor(ctx: Context) {
    super(ctx, 'slots')
  }

  /**
   * Adds `entry` to slot `name`. Undone when the calling plugin unloads, or by the returned
   * disposer. A duplicate id in the same slot and key throws.
   */
  register<N extends string>(name: N, entry: SlotEntry<PropsOfSlot<N>>): () => void {
    if (typeof name !== 'string' || !SLOT_NAME.test(name))
      throw new TypeError(
        `slots.register: bad slot name ${JSON.stringify(name)} (dotted lower-camel words such as "conversation.main")`,
      )
    if (!entry || typeof entry !== 'object')
      throw new TypeError(`slots.register(${name}): expected {id, component, order?, key?}`)
    if (typeof entry.id !== 'string' || !entry.id)
      throw new TypeError(`slots.register(${name}): id must be a non-empty string`)
    if (typeof entry.component !== 'function' && (typeof entry.component !== 'object' || entry.component === null)) {
      throw new TypeError(`slots.register(${name}, ${entry.id}): component must be a React component`)
    }
    if (entry.order !== undefined && !Number.isFinite(entry.order))
      throw new TypeError(`slots.register(${name}, ${entry.id}): order must be a finite number`)
    if (entry.key !== undefined && (typeof entry.key !== 'string' || !entry.key))
      throw new TypeError(`slots.register(${name}, ${entry.id}): key must be a non-empty string`)
    const list = this.slots.get(name) ?? []
    if (list.some((r) => r.id === entry.id && r.key === entry.key)) {
      throw new Error(
        `slots.register(${name}): an entry ${JSON.stringify(entry.id)}${entry.key ? ` for key ${JSON.stringify(entry.key)}` : ''} is already registered`,
      )
    }
    const record: SlotRecord = {
      slot: name,
      id: entry.id,
      order: entry.order ?? 0,
      component: entry.component,
      serial: ++this.serial,
      ...(entry.key !== undefined ? { key: entry.key } : {}),
      ...(this.ctx.fiber?.name ? { owner: this.ctx.fiber.name } : {}),
    }
    const dispose = this.ctx.effect(() => {
      this.insert(record)
      return () => this.remove(record)
    }, `slot:${name}:${entry.id}`)
    return () => void dispose()
  }

  /**
   * Entries of slot `name`, sorted (order, then registration). With `key`, only entries of that
   * key; without it, only unkeyed entries. The array is replaced on every change (stable otherwise).
   */
  entries(name: string, key?: string): readonly SlotRecord[] {
    const list = this.slots.get(name)
    if (!list) return EMPTY
    const cacheKey = key === undefined ? '' : `\0${key}`
    const cached = this.views.get(name)?.get(cacheKey)
    if (cached) return cached
    const view = list.filter((r) => r.key === key)
    let byKey = this.views.get(name)
    if (!byKey) this.views.set(name, (byKey = new Map()))
    byKey.set(cacheKey, view)
    return view
  }

  /** Every slot name with at least one entry (for diagnostics). */
  names(): string[] {
    return [...this.slots.keys()].filter((n) => this.slots.get(n)!.length > 0).sort()
  }

  /** Calls `listener` after any change of slot `name`. */
  subscribe(name: string, listener: () => void): () => void {
    let set = this.listeners.get(name)
    if (!set) this.listeners.set(name, (set = new Set()))
    set.add(listener)
    return () => void set!.delete(listener)
  }

  private readonly views = new Map<string, Map<string, readonly SlotRecord[]>>()

  private insert(record: SlotRecord): void {
    const list = [...(this.slots.get(record.slot) ?? []), record]
    list.sort((a, b) => a.order - b.order || a.serial - b.serial)
    this.slots.set(record.slot, list)
    this.changed(record.slot)
  }

  private remove(record: SlotRecord): void {
    const list = this.slots.get(record.slot)
    if (!list?.includes(record)) return
    this.slots.set(
      record.slot,
      list.filter((r) => r !== record),
    )
    this.changed(record.slot)
  }

  private changed(name: string): void {
    this.views.delete(name)
    for (const listener of [...(this.listeners.get(name) ?? [])]) listener()
  }
}

const EMPTY: readonly SlotRecord[] = Object.freeze([])
