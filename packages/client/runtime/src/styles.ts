// A browser half's stylesheet, tied to its plugin's lifetime.
import type { Context } from 'cordis'

/**
 * Adds `css` to the page as `<style data-owner="{owner}">` while the plugin of `ctx` is loaded, and
 * removes it when the plugin unloads, so a hot-reloaded half replaces its rules instead of stacking
 * a second copy. Outside a browser (a half's logic tested in Node) it does nothing.
 */
export function installStyles(ctx: Context, owner: string, css: string, label = `${owner}: stylesheet`): void {
  ctx.effect(() => {
    if (typeof document === 'undefined') return () => {}
    const style = document.createElement('style')
    style.dataset.owner = owner
    style.textContent = css
    document.head.append(style)
    return () => style.remove()
  }, label)
}
