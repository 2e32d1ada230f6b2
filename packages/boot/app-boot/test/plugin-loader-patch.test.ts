// The local patch of @cordisjs/plugin-loader (patches/@cordisjs__plugin-loader@1.0.0-rc.0.patch,
// note .agents/notes/plugin-loader-tasks.md): `getTasks()` walks the entries without generators,
// and the checks that only ask whether any task is left (after each entry settles, and the
// loader service's `check`) stop at the first one through `hasTasks()`. Same answers, same order.
import { Context } from 'cordis'
import { Group } from '@cordisjs/plugin-loader'
import { entryInitTask } from '@dsh/cordis-compat/loader'
import { expect, it, vi } from 'vitest'
import { DshLoader } from '../src/boot.ts'

/** The patch adds `hasTasks()`; plugin-loader's own types do not declare it. */
const hasTasks = (loader: DshLoader) => (loader as DshLoader & { hasTasks(): boolean }).hasTasks()

/** What getTasks() returned before the patch: every entry's pending task, in entries() order. */
function unpatchedTasks(loader: DshLoader): unknown[] {
  return [...loader.entries()]
    .map((entry) => entryInitTask(entry) || entry.fiber?.inertia)
    .filter((task) => task !== undefined && task !== null)
}

/** A real cordis root with a DshLoader (groups enabled) mounted under it. */
async function mountLoader(): Promise<{ root: Context; loader: DshLoader }> {
  const root = new Context()
  let loader!: DshLoader
  await root.plugin({
    name: 'host',
    apply(ctx: Context) {
      loader = new DshLoader(ctx, { baseUrl: 'file:///tmp/' })
      loader.builtins.group = Group
    },
  })
  return { root, loader }
}

it('reports the same pending tasks, in the same order, as the generator walk while a tree mounts', async () => {
  const { loader } = await mountLoader()
  const gates = new Map<string, () => void>()
  const started: string[] = []
  loader.importModule = async (url: string) => ({
    name: url,
    async apply() {
      started.push(url)
      await new Promise<void>((resolve) => gates.set(url, resolve))
    },
  })
  const rows = [
    { id: 'a', name: 'file:///a.js' },
    {
      id: 'g',
      name: 'cordis:group',
      group: true,
      config: [
        { id: 'b', name: 'file:///b.js' },
        { id: 'c', name: 'file:///c.js' },
      ],
    },
    { id: 'd', name: 'file:///d.js' },
  ]
  const updating = loader.root.update(rows as never)
  const check = () => {
    const tasks = loader.getTasks()
    expect(tasks).toEqual(unpatchedTasks(loader))
    expect(hasTasks(loader)).toBe(tasks.length > 0)
    return tasks.length
  }
  expect(check()).toBeGreaterThan(0)
  // Every row starts and waits on its gate; then they finish one by one, in an order unlike
  // the rows', checking the two answers at each step.
  while (started.length < 4) await new Promise((resolve) => setTimeout(resolve, 1))
  expect(check()).toBe(4)
  for (const url of ['file:///c.js', 'file:///a.js', 'file:///d.js', 'file:///b.js']) {
    gates.get(url)!()
    await new Promise((resolve) => setTimeout(resolve, 1))
    check()
  }
  await updating
  await loader.await()
  expect(hasTasks(loader)).toBe(false)
  expect(loader.getTasks()).toEqual([])
})

it('announces the loader to the tree only once every entry has settled', async () => {
  const { root, loader } = await mountLoader()
  let release!: () => void
  // Tasks left at each announcement of the loader service (after an entry settles with none left).
  const left: number[] = []
  root.on('internal/service', (name: unknown) => {
    if (name === 'loader') left.push(unpatchedTasks(loader).length)
  })
  loader.importModule = async (url: string) =>
    url === 'file:///slow.js'
      ? { name: 'slow', apply: () => new Promise<void>((resolve) => (release = resolve)) }
      : { name: 'fast', apply() {} }
  const updating = loader.root.update([
    { id: 'fast', name: 'file:///fast.js' },
    { id: 'slow', name: 'file:///slow.js' },
  ] as never)
  while (!release) await new Promise((resolve) => setTimeout(resolve, 1))
  // The fast entry has settled while the slow one is pending (only its task is left), and the
  // check that follows a settle (promise steps) has run: no announcement yet.
  await vi.waitFor(() => expect(unpatchedTasks(loader)).toHaveLength(1), { timeout: 10_000, interval: 1 })
  await new Promise((resolve) => setImmediate(resolve))
  expect(left).toEqual([])
  release()
  await updating
  await loader.await()
  await vi.waitFor(() => expect(left.length).toBeGreaterThan(0), { timeout: 10_000, interval: 1 })
  expect(left.every((n) => n === 0)).toBe(true)
})
