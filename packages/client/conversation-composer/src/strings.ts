// The composer's messages, English and Chinese: `composer.*` (the field and its buttons) and
// `image.*` (thumbnails and the viewer). They have no namespace of their own: @dsh/ui-conversation
// spreads them into its `conversation` dictionaries and hands the composer that namespace's
// `Translate`.
export type { Translate } from '@dsh/client-runtime'

export const en = {
  'composer.placeholder': 'Message dsh (Enter sends, Shift+Enter breaks the line)',
  'composer.placeholderRunning': 'Queue a follow-up, or steer the running turn',
  'composer.label': 'Message',
  'composer.send': 'Send',
  'composer.queue': 'Queue',
  'composer.steer': 'Steer',
  'composer.steerHint': 'Give this to the running turn at its next step',
  'composer.stop': 'Stop',
  'composer.stopHint': 'Cancel the running turn (Esc)',
  'composer.hint': 'Enter to send · Shift+Enter for a new line · ↑/↓ history · Esc stops',
  'composer.failed': 'Could not send: {message}',
  'composer.disabled': 'This session does not accept messages',
  'image.list': 'Images',
  'image.open': 'View image {name}',
  'image.remove': 'Remove image {name}',
  'image.close': 'Close the image',
  'image.unnamed': 'unnamed',
} as const

export type ComposerKey = keyof typeof en

export const zh: Record<ComposerKey, string> = {
  'composer.placeholder': '给 dsh 发消息（Enter 发送，Shift+Enter 换行）',
  'composer.placeholderRunning': '排队一条后续消息，或引导正在运行的一轮',
  'composer.label': '消息',
  'composer.send': '发送',
  'composer.queue': '排队',
  'composer.steer': '引导',
  'composer.steerHint': '在下一步交给正在运行的一轮',
  'composer.stop': '停止',
  'composer.stopHint': '取消正在运行的一轮（Esc）',
  'composer.hint': 'Enter 发送 · Shift+Enter 换行 · ↑/↓ 历史 · Esc 停止',
  'composer.failed': '发送失败：{message}',
  'composer.disabled': '此会话不接受消息',
  'image.list': '图片',
  'image.open': '查看图片 {name}',
  'image.remove': '移除图片 {name}',
  'image.close': '关闭图片',
  'image.unnamed': '未命名',
}
