// The primitives that load on first use (a chunk of their own): select, popover and tabs.
import { createElement as h } from 'react'
import * as PopoverPrimitive from '@radix-ui/react-popover'
import * as SelectPrimitive from '@radix-ui/react-select'
import * as TabsPrimitive from '@radix-ui/react-tabs'
import { Check, ChevronDown } from 'lucide-react'
import { type PopoverProps, type SelectProps, type TabsProps, testIdProp } from './primitives.ts'

export { PopoverPrimitive, SelectPrimitive, TabsPrimitive }

const cx = (...names: Array<string | false | undefined>) => names.filter(Boolean).join(' ')

export function Select({
  value,
  onValueChange,
  options,
  placeholder,
  disabled,
  className,
  testId,
  ...rest
}: SelectProps) {
  return h(
    SelectPrimitive.Root,
    { value, onValueChange, disabled },
    h(
      SelectPrimitive.Trigger,
      { className: cx('dsh-select', className), 'aria-label': rest['aria-label'], ...testIdProp(testId) },
      h(SelectPrimitive.Value, { placeholder }),
      h(SelectPrimitive.Icon, { className: 'dsh-select-icon' }, h(ChevronDown, { size: 14, 'aria-hidden': true })),
    ),
    h(
      SelectPrimitive.Portal,
      null,
      h(
        SelectPrimitive.Content,
        { className: 'dsh-menu dsh-select-content', position: 'popper', sideOffset: 4 },
        h(
          SelectPrimitive.Viewport,
          null,
          options.map((o) =>
            h(
              SelectPrimitive.Item,
              { key: o.value, value: o.value, className: 'dsh-menu-item' },
              h(SelectPrimitive.ItemText, null, o.label),
              h(
                SelectPrimitive.ItemIndicator,
                { className: 'dsh-select-check' },
                h(Check, { size: 14, 'aria-hidden': true }),
              ),
            ),
          ),
        ),
      ),
    ),
  )
}

export function Popover({
  trigger,
  children,
  open,
  onOpenChange,
  side = 'bottom',
  align = 'start',
  label,
  className,
}: PopoverProps) {
  return h(
    PopoverPrimitive.Root,
    { ...(open === undefined ? {} : { open }), ...(onOpenChange ? { onOpenChange } : {}) },
    h(PopoverPrimitive.Trigger, { asChild: true }, trigger),
    h(
      PopoverPrimitive.Portal,
      null,
      h(
        PopoverPrimitive.Content,
        { className: cx('dsh-popover', className), side, align, sideOffset: 6, 'aria-label': label },
        children,
      ),
    ),
  )
}

export function Tabs({
  tabs,
  value,
  defaultValue,
  onValueChange,
  label,
  orientation = 'horizontal',
  className,
}: TabsProps) {
  return h(
    TabsPrimitive.Root,
    {
      className: cx('dsh-tabs', `dsh-tabs-${orientation}`, className),
      orientation,
      ...(value === undefined ? { defaultValue: defaultValue ?? tabs[0]?.value } : { value }),
      ...(onValueChange ? { onValueChange } : {}),
    },
    h(
      TabsPrimitive.List,
      { className: 'dsh-tabs-list', 'aria-label': label },
      tabs.map((t) => h(TabsPrimitive.Trigger, { key: t.value, value: t.value, className: 'dsh-tab' }, t.label)),
    ),
    tabs.map((t) => h(TabsPrimitive.Content, { key: t.value, value: t.value, className: 'dsh-tab-panel' }, t.content)),
  )
}
