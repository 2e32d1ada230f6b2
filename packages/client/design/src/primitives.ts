// Accessible primitives of dsh web: dialog, menu, select, popover, tooltip and tabs on Radix UI
// (keyboard, focus and ARIA handled there), styled with the tokens. Each is a small component
// with the props the app needs; the Radix namespaces are exported too (`DialogPrimitive`, ...)
// for a half that needs the parts; select, popover and tabs load on first use, `loadPrimitives()`. Written with createElement (this package builds as plain TS).
import {
  createElement as h,
  forwardRef,
  lazy,
  Suspense,
  type ButtonHTMLAttributes,
  type ComponentType,
  type ReactElement,
  type ReactNode,
  useRef,
} from 'react'
import * as DialogPrimitive from '@radix-ui/react-dialog'
import * as MenuPrimitive from '@radix-ui/react-dropdown-menu'
import * as TooltipPrimitive from '@radix-ui/react-tooltip'
import { X, type LucideIcon } from 'lucide-react'

export { DialogPrimitive, MenuPrimitive, TooltipPrimitive }

const cx = (...names: Array<string | false | undefined>) => names.filter(Boolean).join(' ')

/** `data-testid` for a Radix part (whose prop types do not list data attributes). */
export const testIdProp = (id: string | undefined): object => (id ? { 'data-testid': id } : {})

export type ButtonVariant = 'default' | 'primary' | 'ghost' | 'danger'
export interface ButtonProps extends ButtonHTMLAttributes<HTMLButtonElement> {
  variant?: ButtonVariant
  size?: 'sm' | 'md'
  icon?: LucideIcon
}

/** A button in the design's variants; `icon` goes before the label. */
export const Button = forwardRef<HTMLButtonElement, ButtonProps>(function Button(
  { variant = 'default', size = 'md', icon, className, children, type = 'button', ...rest },
  ref,
) {
  return h(
    'button',
    // biome-ignore lint/a11y/useButtonType: the type is a prop, 'button' unless the caller says otherwise
    { ref, type, className: cx('dsh-btn', `dsh-btn-${variant}`, size === 'sm' && 'dsh-btn-sm', className), ...rest },
    icon ? h(icon, { size: 16, 'aria-hidden': true }) : null,
    children,
  )
})

export interface IconButtonProps extends Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'children'> {
  /** The accessible name (and the tooltip, unless `tooltip` is false). */
  label: string
  icon: LucideIcon
  tooltip?: boolean
  size?: number
}

/** A square button showing only an icon: labelled for assistive technology, with a tooltip. */
export const IconButton = forwardRef<HTMLButtonElement, IconButtonProps>(function IconButton(
  { label, icon, tooltip = true, size = 16, className, type = 'button', ...rest },
  ref,
) {
  const button = h(
    'button',
    // biome-ignore lint/a11y/useButtonType: the type is a prop, 'button' unless the caller says otherwise
    { ref, type, 'aria-label': label, className: cx('dsh-icon-btn', className), ...rest },
    h(icon, { size, 'aria-hidden': true }),
  )
  return tooltip ? h(Tooltip, { content: label } as TooltipProps, button) : button
})

export interface TooltipProps {
  content: ReactNode
  children: ReactElement
  side?: 'top' | 'right' | 'bottom' | 'left'
}

/** A hint on hover and keyboard focus (never the only name of a control). */
export function Tooltip({ content, children, side = 'top' }: TooltipProps) {
  return h(
    TooltipPrimitive.Provider,
    // (children go as the third argument; the cast is for the prop type that requires them)
    { delayDuration: 400, skipDelayDuration: 200 } as TooltipPrimitive.TooltipProviderProps,
    h(
      TooltipPrimitive.Root,
      null,
      h(TooltipPrimitive.Trigger, { asChild: true }, children),
      h(
        TooltipPrimitive.Portal,
        null,
        h(TooltipPrimitive.Content, { className: 'dsh-tooltip', side, sideOffset: 6 }, content),
      ),
    ),
  )
}

export interface DialogProps {
  open: boolean
  onOpenChange: (open: boolean) => void
  title: ReactNode
  description?: ReactNode
  children?: ReactNode
  size?: 'sm' | 'md' | 'lg'
  className?: string
  /** data-testid of the dialog element. */
  testId?: string
  /** Accessible name of the close button (in the page's language). */
  closeLabel?: string
}

/** A modal dialog: focus trapped inside, Escape and the close button close it, title announced. */
export function Dialog({
  open,
  onOpenChange,
  title,
  description,
  children,
  size = 'md',
  className,
  testId,
  closeLabel = 'Close',
}: DialogProps) {
  return h(
    DialogPrimitive.Root,
    { open, onOpenChange },
    h(
      DialogPrimitive.Portal,
      null,
      h(DialogPrimitive.Overlay, { className: 'dsh-overlay' }),
      h(
        DialogPrimitive.Content,
        {
          className: cx('dsh-dialog', `dsh-dialog-${size}`, className),
          ...testIdProp(testId),
          ...(description === undefined ? { 'aria-describedby': undefined } : {}),
        },
        h(
          'div',
          { className: 'dsh-dialog-head' },
          h(DialogPrimitive.Title, { className: 'dsh-dialog-title' }, title),
          h(
            DialogPrimitive.Close,
            { asChild: true },
            h(IconButton, { label: closeLabel, icon: X, tooltip: false, className: 'dsh-dialog-close' }),
          ),
        ),
        description === undefined
          ? null
          : h(DialogPrimitive.Description, { className: 'dsh-dialog-desc' }, description),
        h('div', { className: 'dsh-dialog-body' }, children),
      ),
    ),
  )
}

export type MenuEntry =
  | {
      label: ReactNode
      onSelect: () => void
      icon?: LucideIcon
      danger?: boolean
      disabled?: boolean
      testId?: string
      /**
       * The item puts the focus somewhere itself (an inline rename field): the closing menu then
       * does not return the focus to its trigger, which would blur that field at once.
       */
      movesFocus?: boolean
    }
  | 'separator'

export interface MenuProps {
  /** The element that opens the menu (a button). */
  trigger: ReactElement
  items: MenuEntry[]
  align?: 'start' | 'center' | 'end'
  label?: string
}

/** A menu of actions opened from a button (arrow keys, typeahead, Escape). */
export function Menu({ trigger, items, align = 'end', label }: MenuProps) {
  // Set by an item that moves the focus itself, read when the menu closes (same interaction).
  const focusMoved = useRef(false)
  return h(
    MenuPrimitive.Root,
    { modal: false },
    h(MenuPrimitive.Trigger, { asChild: true }, trigger),
    h(
      MenuPrimitive.Portal,
      null,
      h(
        MenuPrimitive.Content,
        {
          className: 'dsh-menu',
          align,
          sideOffset: 4,
          'aria-label': label,
          onCloseAutoFocus: (event: Event) => {
            if (!focusMoved.current) return
            focusMoved.current = false
            event.preventDefault()
          },
        },
        items.map((item, i) =>
          item === 'separator'
            ? h(MenuPrimitive.Separator, { key: `s${i}`, className: 'dsh-menu-sep' })
            : h(
                MenuPrimitive.Item,
                {
                  key: i,
                  className: cx('dsh-menu-item', item.danger && 'dsh-menu-danger'),
                  disabled: item.disabled,
                  onSelect: () => {
                    focusMoved.current = item.movesFocus === true
                    item.onSelect()
                  },
                  ...testIdProp(item.testId),
                },
                item.icon ? h(item.icon, { size: 15, 'aria-hidden': true }) : null,
                item.label,
              ),
        ),
      ),
    ),
  )
}

export interface SelectOption {
  value: string
  label: ReactNode
  description?: ReactNode
}

export interface SelectProps {
  value: string
  onValueChange: (value: string) => void
  options: SelectOption[]
  'aria-label': string
  placeholder?: string
  disabled?: boolean
  className?: string
  testId?: string
}

export interface PopoverProps {
  trigger: ReactElement
  children: ReactNode
  open?: boolean
  onOpenChange?: (open: boolean) => void
  side?: 'top' | 'right' | 'bottom' | 'left'
  align?: 'start' | 'center' | 'end'
  label?: string
  className?: string
}

export interface TabItem {
  value: string
  label: ReactNode
  content: ReactNode
}

export interface TabsProps {
  tabs: TabItem[]
  value?: string
  defaultValue?: string
  onValueChange?: (value: string) => void
  label: string
  orientation?: 'horizontal' | 'vertical'
  className?: string
}

// Select, popover and tabs load on first use (their chunk is not part of the page's initial JS).
const overlays = () => import('./overlays.ts')
const LazySelect = lazy(() => overlays().then((m) => ({ default: m.Select })))
const LazyPopover = lazy(() => overlays().then((m) => ({ default: m.Popover })))
const LazyTabs = lazy(() => overlays().then((m) => ({ default: m.Tabs })))

/** The Radix namespaces of the primitives that load on first use (select, popover, tabs). */
export function loadPrimitives(): Promise<{
  SelectPrimitive: typeof import('@radix-ui/react-select')
  PopoverPrimitive: typeof import('@radix-ui/react-popover')
  TabsPrimitive: typeof import('@radix-ui/react-tabs')
}> {
  return overlays().then((m) => ({
    SelectPrimitive: m.SelectPrimitive,
    PopoverPrimitive: m.PopoverPrimitive,
    TabsPrimitive: m.TabsPrimitive,
  }))
}

/** A styled listbox select (a native <select> suits forms that must post natively). */
export function Select(props: SelectProps) {
  return h(
    Suspense,
    {
      fallback: h('span', { className: cx('dsh-select', props.className), 'aria-busy': true }, props.placeholder ?? ''),
    },
    h(LazySelect, props),
  )
}

/** Non-modal floating content anchored to a trigger (Escape and an outside click close it). */
export function Popover(props: PopoverProps) {
  return h(Suspense, { fallback: props.trigger }, h(LazyPopover, props))
}

/** Tabs with arrow-key navigation between them; only the selected panel is mounted. */
export function Tabs(props: TabsProps) {
  return h(Suspense, { fallback: null }, h(LazyTabs, props))
}

/** A small coloured dot for a session or run status (running, waiting, error, idle). */
export function StatusDot({ status, label }: { status: string; label?: string }) {
  return h('span', {
    className: `dsh-status-dot dsh-status-${status}`,
    ...(label ? { role: 'img', 'aria-label': label, title: label } : { 'aria-hidden': true }),
  })
}

/** Keyboard key cap. */
export function Kbd({ children }: { children: ReactNode }) {
  return h('kbd', { className: 'dsh-kbd' }, children)
}

export type { ComponentType }
