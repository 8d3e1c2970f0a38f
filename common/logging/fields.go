package logging

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The fields every log line about a workflow instance or a task instance
// carries, under these names, so that a machine reading the json log can
// select one run's or one task's lines (docs/architecture.md, "Logs").
const (
	FieldInstance = "instance_id"
	FieldTask     = "task_id"
	FieldWorkflow = "workflow"
	FieldProject  = "project"
)

type ref struct {
	instance, task    int64
	project, workflow string
}

func (r ref) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddInt64(FieldInstance, r.instance)
	if r.task != 0 {
		enc.AddInt64(FieldTask, r.task)
	}
	enc.AddString(FieldWorkflow, r.workflow)
	enc.AddString(FieldProject, r.project)
	return nil
}

// Instance is one field adding instance_id, workflow and project.
func Instance(id int64, project, workflow string) zap.Field {
	return zap.Inline(ref{instance: id, project: project, workflow: workflow})
}

// Task is one field adding instance_id, task_id, workflow and project.
func Task(instanceID, taskID int64, project, workflow string) zap.Field {
	return zap.Inline(ref{instance: instanceID, task: taskID, project: project, workflow: workflow})
}

// TaskID names a task alone: for a line about a task id whose instance the
// logger already names (a runner's), or that nothing more is known of.
func TaskID(id int64) zap.Field { return zap.Int64(FieldTask, id) }
