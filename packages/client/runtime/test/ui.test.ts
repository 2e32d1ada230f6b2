// `@dsh/client-runtime/ui` is the design system's older name: a browser half built against it
// must get exactly the bindings of `@dsh/client-design` (the same objects, so one instance).
import { describe, expect, it } from 'vitest'
import * as design from '@dsh/client-design'
import * as runtimeUi from '@dsh/client-runtime/ui'

describe('@dsh/client-runtime/ui', () => {
  it('is what @dsh/client-design exports, binding for binding', () => {
    const names = Object.keys(design).sort()
    expect(names.length).toBeGreaterThan(20)
    expect(Object.keys(runtimeUi).sort()).toEqual(names)
    for (const name of names)
      expect(runtimeUi[name as keyof typeof runtimeUi]).toBe(design[name as keyof typeof design])
  })
})
