// Task and instance states: the label, a symbol so the legend and nodes do
// not rely on colour alone, and the CSS class of the colour (st-<state>).
export const STATE_SYMBOL: Record<string, string> = {
  '': '○',
  submitted: '◔',
  dispatched: '◑',
  delayed: '◷',
  running: '▶',
  succeeded: '✓',
  forced_success: '☑',
  failed: '✗',
  killed: '■',
  paused: '‖',
  stopped: '■',
  skipped: '↷',
  need_fault_tolerance: '⚠',
  ready_pause: '‖',
  ready_stop: '■',
};

export const TASK_STATES = ['', 'submitted', 'dispatched', 'delayed', 'running', 'succeeded', 'forced_success',
  'failed', 'killed', 'paused', 'skipped', 'need_fault_tolerance'];

export function stateLabel(s: string): string {
  return s ? s.replace(/_/g, ' ') : 'not started';
}

export function stateClass(s: string): string {
  return 'st-' + (s || 'none');
}

const FINISHED = new Set(['succeeded', 'failed', 'killed', 'forced_success', 'paused', 'need_fault_tolerance', 'skipped']);
export function taskFinished(s: string): boolean { return FINISHED.has(s); }

const FINISHED_WF = new Set(['paused', 'stopped', 'failed', 'succeeded']);
export function workflowFinished(s: string): boolean { return FINISHED_WF.has(s); }

export const WORKFLOW_STATES = ['submitted', 'running', 'ready_pause', 'paused', 'ready_stop', 'stopped', 'failed', 'succeeded'];
export const PRIORITIES = ['highest', 'high', 'medium', 'low', 'lowest'];
