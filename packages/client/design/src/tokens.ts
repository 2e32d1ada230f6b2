// The design tokens of dsh web, in one place: type scale, spacing, colour (light and dark),
// radius, elevation and motion. They reach the page as CSS custom properties (`--dsh-*`, set on
// :root by `tokensCss()`; `html[data-theme=dark]` swaps the colours), and script reads them as
// `var(...)` strings through `tokens`, so a browser half styles itself with the same values.

/** Colours of one scheme. Text colours meet WCAG AA (4.5:1) on `bg`, `bgSubtle` and `surface`. */
export interface Palette {
  bg: string
  bgSubtle: string
  bgHover: string
  surface: string
  surfaceRaised: string
  fg: string
  fgMuted: string
  border: string
  borderStrong: string
  accent: string
  accentFg: string
  accentSubtle: string
  danger: string
  dangerSubtle: string
  warn: string
  warnSubtle: string
  success: string
  successSubtle: string
  userBubble: string
  codeBg: string
  overlay: string
  focus: string
}

export const light: Palette = {
  bg: '#ffffff',
  bgSubtle: '#f6f7f9',
  bgHover: '#eceef2',
  surface: '#ffffff',
  surfaceRaised: '#ffffff',
  fg: '#1b1e24',
  fgMuted: '#59606b',
  border: '#e0e3e8',
  borderStrong: '#c5cad2',
  accent: '#2455d6',
  accentFg: '#ffffff',
  accentSubtle: '#eaf0ff',
  danger: '#b42318',
  dangerSubtle: '#fdecea',
  warn: '#8a4b00',
  warnSubtle: '#fff4d6',
  success: '#1f7a3a',
  successSubtle: '#e6f6ea',
  userBubble: '#eef2ff',
  codeBg: '#f2f3f5',
  overlay: 'rgba(15, 17, 21, 0.45)',
  focus: '#2455d6',
}

export const dark: Palette = {
  bg: '#15171c',
  bgSubtle: '#1b1e24',
  bgHover: '#262a32',
  surface: '#1b1e24',
  surfaceRaised: '#22262d',
  fg: '#e7e9ed',
  fgMuted: '#a3aab6',
  border: '#2e333b',
  borderStrong: '#444b56',
  accent: '#7ea2ff',
  accentFg: '#0b0d12',
  accentSubtle: '#1f2a44',
  danger: '#ff8a80',
  dangerSubtle: '#3a1a18',
  warn: '#ffc266',
  warnSubtle: '#3a3120',
  success: '#74d68b',
  successSubtle: '#15301d',
  userBubble: '#232a3d',
  codeBg: '#22262d',
  overlay: 'rgba(0, 0, 0, 0.6)',
  focus: '#7ea2ff',
}

export const scale = {
  font: {
    sans: 'system-ui, -apple-system, "Segoe UI", "PingFang SC", "Microsoft YaHei", sans-serif',
    mono: 'ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace',
  },
  /** Type scale (px): captions, secondary text, body, lead, headings. */
  text: { xs: '12px', sm: '13px', md: '14px', lg: '16px', xl: '20px', '2xl': '26px' },
  leading: { tight: '1.25', normal: '1.5', relaxed: '1.65' },
  weight: { normal: '400', medium: '500', semibold: '600' },
  /** Spacing on a 4 px grid. */
  space: { 0: '0', 1: '4px', 2: '8px', 3: '12px', 4: '16px', 5: '20px', 6: '24px', 8: '32px', 10: '40px', 12: '48px' },
  radius: { sm: '4px', md: '8px', lg: '12px', xl: '16px', full: '999px' },
  shadow: {
    1: '0 1px 2px rgba(16, 24, 40, 0.06), 0 1px 3px rgba(16, 24, 40, 0.08)',
    2: '0 4px 8px -2px rgba(16, 24, 40, 0.10), 0 2px 4px -2px rgba(16, 24, 40, 0.06)',
    3: '0 16px 32px -8px rgba(16, 24, 40, 0.22), 0 4px 8px -4px rgba(16, 24, 40, 0.08)',
  },
  motion: { fast: '120ms', normal: '200ms', slow: '320ms', ease: 'cubic-bezier(0.2, 0, 0, 1)' },
  z: { sticky: '10', drawer: '40', popover: '50', dialog: '60', toast: '70' },
} as const

const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())

function paletteVars(p: Palette): string {
  return Object.entries(p)
    .map(([k, v]) => `--dsh-color-${kebab(k)}:${v};`)
    .join('')
}

function scaleVars(): string {
  let out = `--dsh-font-sans:${scale.font.sans};--dsh-font-mono:${scale.font.mono};`
  for (const [group, values] of Object.entries(scale)) {
    if (group === 'font') continue
    for (const [k, v] of Object.entries(values)) out += `--dsh-${group}-${k}:${v};`
  }
  return out
}

/**
 * The older names the shell and the first browser halves styled themselves with, kept as aliases
 * of the tokens so a half written against them follows the design (and the theme) unchanged.
 */
const ALIASES =
  '--bg:var(--dsh-color-bg);--bg-soft:var(--dsh-color-bg-subtle);--bg-hover:var(--dsh-color-bg-hover);' +
  '--fg:var(--dsh-color-fg);--fg-muted:var(--dsh-color-fg-muted);--border:var(--dsh-color-border);' +
  '--accent:var(--dsh-color-accent);--accent-fg:var(--dsh-color-accent-fg);--danger:var(--dsh-color-danger);' +
  '--warn-bg:var(--dsh-color-warn-subtle);--code-bg:var(--dsh-color-code-bg);--radius:var(--dsh-radius-md);' +
  '--dsh-ok:var(--dsh-color-success);--dsh-danger:var(--dsh-color-danger);--dsh-border:var(--dsh-color-border);' +
  '--dsh-mono:var(--dsh-font-mono);'

/** The stylesheet that defines every token (light on :root, dark under html[data-theme=dark]). */
export function tokensCss(): string {
  return (
    `:root{${scaleVars()}${paletteVars(light)}${ALIASES}color-scheme:light;}` +
    `:root[data-theme=dark]{${paletteVars(dark)}color-scheme:dark;}` +
    '@media (prefers-reduced-motion:reduce){:root{--dsh-motion-fast:0ms;--dsh-motion-normal:0ms;--dsh-motion-slow:0ms;}}'
  )
}

type VarMap<T> = { readonly [K in keyof T]: string }
const vars = <T extends object>(prefix: string, o: T): VarMap<T> =>
  Object.fromEntries(Object.keys(o).map((k) => [k, `var(--dsh-${prefix}-${kebab(k)})`])) as VarMap<T>

/** Every token as a `var(--dsh-...)` string, for inline styles and CSS written in script. */
export const tokens = {
  color: vars('color', light),
  text: vars('text', scale.text),
  leading: vars('leading', scale.leading),
  weight: vars('weight', scale.weight),
  space: vars('space', scale.space),
  radius: vars('radius', scale.radius),
  shadow: vars('shadow', scale.shadow),
  motion: vars('motion', scale.motion),
  z: vars('z', scale.z),
  font: { sans: 'var(--dsh-font-sans)', mono: 'var(--dsh-font-mono)' },
} as const
