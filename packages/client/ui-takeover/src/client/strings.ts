// The `takeover` namespace's messages (English, Chinese).
export type Translate = (key: string, vars?: Record<string, string | number>) => string

export const en = {
  'approval.heading': 'Approval needed',
  'approval.kind.command': 'Run a command',
  'approval.kind.write': 'Write a file',
  'approval.kind.network': 'Use the network',
  'approval.kind.tool': 'Use a tool',
  'approval.kind.other': 'Approve an action',
  'approval.action': 'Exact action',
  'approval.allowOnce': 'Allow once',
  'approval.allowSession': 'Allow for this session',
  'approval.deny': 'Deny',
  'approval.denyWithReason': 'Deny with this reason',
  'approval.reason': 'Reason (the model reads it)',
  'approval.reasonPlaceholder': 'Why not, or what to do instead',
  'approval.back': 'Back',
  'approval.pending': '{count} more waiting',
  'question.heading': 'The agent asks',
  'question.other': 'Your answer',
  'question.comment': 'Comment (optional)',
  'question.submit': 'Send answers',
  'question.unanswered': 'Answer every question to send',
  'question.multi': 'Pick any number',
  'question.single': 'Pick one',
  stopTurn: 'Stop the turn',
  failed: 'Could not send: {message}',
  sending: 'Sending…',
} as const

export type TakeoverKey = keyof typeof en

export const zh: Record<TakeoverKey, string> = {
  'approval.heading': '需要批准',
  'approval.kind.command': '运行命令',
  'approval.kind.write': '写入文件',
  'approval.kind.network': '访问网络',
  'approval.kind.tool': '使用工具',
  'approval.kind.other': '批准一个操作',
  'approval.action': '具体操作',
  'approval.allowOnce': '允许一次',
  'approval.allowSession': '本会话内允许',
  'approval.deny': '拒绝',
  'approval.denyWithReason': '以此理由拒绝',
  'approval.reason': '理由（模型会读到）',
  'approval.reasonPlaceholder': '为什么不行，或应该怎么做',
  'approval.back': '返回',
  'approval.pending': '还有 {count} 个在等待',
  'question.heading': '助手提问',
  'question.other': '你的回答',
  'question.comment': '补充说明（可选）',
  'question.submit': '发送回答',
  'question.unanswered': '回答所有问题后才能发送',
  'question.multi': '可多选',
  'question.single': '单选',
  stopTurn: '停止本轮',
  failed: '发送失败：{message}',
  sending: '发送中…',
}

export function translator(messages: Record<string, string>, fallback: Record<string, string> = en): Translate {
  return (key, vars) => {
    const text = messages[key] ?? fallback[key] ?? key
    return vars ? text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m)) : text
  }
}
