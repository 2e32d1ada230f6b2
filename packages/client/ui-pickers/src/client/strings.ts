// The `pickers` namespace's messages (English, Chinese).
export type Translate = (key: string, vars?: Record<string, string | number>) => string

export const en = {
  'model.label': 'Model',
  'model.loading': 'Loading models…',
  'model.none': 'No models listed for {provider}',
  'model.failed': 'Could not list models: {message}',
  'model.default': 'default',
  'effort.label': 'Reasoning',
  'effort.off': 'Off',
  'effort.low': 'Low',
  'effort.high': 'High',
  'effort.max': 'Max',
  'effort.unset': 'Model default',
  'mode.label': 'Permissions',
  'mode.read-only': 'Read only',
  'mode.workspace-write': 'Workspace',
  'mode.danger-full-access': 'Full access',
  'mode.read-only.hint': 'Reads anywhere; writes and network need approval',
  'mode.workspace-write.hint': 'Writes inside the workspace; asks before leaving the sandbox',
  'mode.danger-full-access.hint': 'No sandbox and no approvals: commands can change anything',
  'mode.confirmTitle': 'Give full access?',
  'mode.confirmBody':
    'Commands and edits will run without a sandbox and without asking you. Only do this in a folder and on a machine you can afford to lose.',
  'mode.confirm': 'I understand, give full access',
  'mode.cancel': 'Keep the current mode',
  failed: 'Could not change it: {message}',
  saving: 'Saving…',
} as const

export type PickerKey = keyof typeof en

export const zh: Record<PickerKey, string> = {
  'model.label': '模型',
  'model.loading': '正在加载模型…',
  'model.none': '{provider} 没有列出模型',
  'model.failed': '无法列出模型：{message}',
  'model.default': '默认',
  'effort.label': '推理',
  'effort.off': '关闭',
  'effort.low': '低',
  'effort.high': '高',
  'effort.max': '最高',
  'effort.unset': '模型默认',
  'mode.label': '权限',
  'mode.read-only': '只读',
  'mode.workspace-write': '工作区',
  'mode.danger-full-access': '完全访问',
  'mode.read-only.hint': '可以读取任何位置；写入和联网需要批准',
  'mode.workspace-write.hint': '可以写入工作区；离开沙箱前会询问',
  'mode.danger-full-access.hint': '没有沙箱也不询问：命令可以修改任何东西',
  'mode.confirmTitle': '授予完全访问？',
  'mode.confirmBody': '命令和编辑将在没有沙箱、也不询问你的情况下运行。只在你能承受损失的文件夹和机器上这样做。',
  'mode.confirm': '我明白，授予完全访问',
  'mode.cancel': '保持当前模式',
  failed: '无法更改：{message}',
  saving: '保存中…',
}

export function translator(messages: Record<string, string>, fallback: Record<string, string> = en): Translate {
  return (key, vars) => {
    const text = messages[key] ?? fallback[key] ?? key
    return vars ? text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m)) : text
  }
}
