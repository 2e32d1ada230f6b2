// Model-facing text of plan mode: the prompt section and the exit tool's description.

export const PLAN_SECTION_ID = 'plan:mode'

export const PLAN_SECTION_TEXT = [
  'Plan mode is on. The human wants to agree on a plan before anything changes:',
  '- Investigate with read-only tools (reading, searching). Tools that change files, run commands or start other agents are refused while planning.',
  '- Ask the human (ask_user_question) when a choice is theirs to make.',
  '- When you know what to do, call exit_plan_mode with the plan: the concrete steps and the files you will change. The human approves it, or asks you to keep planning.',
  '- Do not start the work until the plan is approved.',
].join('\n')

export const EXIT_TOOL_DESCRIPTION =
  'Propose your plan to the human and ask to leave plan mode. Call it once your investigation is done, with the whole plan ' +
  'in Markdown. The result says whether the plan was approved (then carry it out) or what to change (then keep planning).'
