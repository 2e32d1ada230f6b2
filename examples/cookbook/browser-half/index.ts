// Recipe: a browser half, host side. A package with UI is mounted as an ordinary row; the web host
// serves the browser half (`./client` in package.json) of every enabled row, so the host half of a
// UI-only package is this empty plugin: unloading the row removes the panel from the page.
export const name = 'cookbook-tool-tally'
export function apply() {}
