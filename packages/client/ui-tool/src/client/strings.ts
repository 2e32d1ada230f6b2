// The `tool` namespace's messages (English, Chinese).
export type Translate = (key: string, vars?: Record<string, string | number>) => string

export const en = {
  'status.streaming': 'Preparing',
  'status.running': 'Running',
  'status.done': 'Done',
  'status.error': 'Failed',
  'status.cancelled': 'Stopped',
  exit: 'exit {code}',
  signal: 'signal {signal}',
  timedOut: 'timed out',
  noOutput: '(no output)',
  showAll: 'Show all {count} lines',
  showLess: 'Show less',
  showingOf: 'Showing {shown} of {count} lines',
  expand: 'Details',
  collapse: 'Hide',
  arguments: 'Arguments',
  output: 'Output',
  error: 'Error',
  errorCode: 'code {code}',
  spilled: 'The full output ({bytes} bytes) was saved to {path}',
  truncatedOutput: 'The middle of the output was left out of what the model saw',
  created: 'new file',
  diffOmitted: 'The file is too large for a diff',
  linesAdded: '+{count}',
  linesRemoved: '−{count}',
  'read.lines': 'lines {first}–{last} of {total}',
  'grep.matches': '{total} match(es) in {files} file(s)',
  'glob.files': '{total} file(s)',
  'todo.title': 'Plan',
  'todo.completed': 'done',
  'todo.in_progress': 'in progress',
  'todo.pending': 'to do',
  images: '{count} image(s)',
  invalidArguments: 'The model sent arguments that are not valid JSON',
  progress: 'Progress',
} as const

export type ToolKey = keyof typeof en

export const zh: Record<ToolKey, string> = {
  'status.streaming': '准备中',
  'status.running': '运行中',
  'status.done': '完成',
  'status.error': '失败',
  'status.cancelled': '已停止',
  exit: '退出码 {code}',
  signal: '信号 {signal}',
  timedOut: '已超时',
  noOutput: '（无输出）',
  showAll: '显示全部 {count} 行',
  showLess: '收起',
  showingOf: '显示 {shown} / {count} 行',
  expand: '详情',
  collapse: '隐藏',
  arguments: '参数',
  output: '输出',
  error: '错误',
  errorCode: '代码 {code}',
  spilled: '完整输出（{bytes} 字节）已保存到 {path}',
  truncatedOutput: '输出的中间部分没有提供给模型',
  created: '新文件',
  diffOmitted: '文件太大，无法显示差异',
  linesAdded: '+{count}',
  linesRemoved: '−{count}',
  'read.lines': '第 {first}–{last} 行，共 {total} 行',
  'grep.matches': '{files} 个文件中 {total} 处匹配',
  'glob.files': '{total} 个文件',
  'todo.title': '计划',
  'todo.completed': '已完成',
  'todo.in_progress': '进行中',
  'todo.pending': '待办',
  images: '{count} 张图片',
  invalidArguments: '模型发送的参数不是有效的 JSON',
  progress: '进度',
}

export function translator(messages: Record<string, string>, fallback: Record<string, string> = en): Translate {
  return (key, vars) => {
    const text = messages[key] ?? fallback[key] ?? key
    return vars ? text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m)) : text
  }
}
