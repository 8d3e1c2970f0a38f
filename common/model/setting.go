package model

// The settings the master reads (the API's are in api/quota.go, which
// lists these too so admins can change them); defaults as 0030 seeds them.
const (
	SettingSubWorkflowDepth = "quota.sub_workflow_depth"
	SettingInstancesPerRun  = "quota.instances_per_run"
	// SettingVersionsPerWorkflow caps the versions one workflow keeps: an
	// apply that would make one more is refused (store.ErrVersionQuota).
	SettingVersionsPerWorkflow = "quota.versions_per_workflow"

	// SettingUnsandboxedCode: 1 lets non-admins run shell and python tasks
	// on a server whose tasks run as its own OS user; 0 (the default)
	// refuses them (docs/security.md, item 1).
	SettingUnsandboxedCode = "tasks.allow_unsandboxed_code"

	// The leader's admission limits (docs/architecture.md, Admission): past
	// one, it claims no new runs (they wait in the DB with a reason saying
	// which) until there is room again.
	//
	// SettingMaxRunningInstances: workflow instances the leader runs at once
	// (a runner each).
	SettingMaxRunningInstances = "admission.max_running_instances"
	// SettingMaxPendingEvents: outbox rows not yet published.
	SettingMaxPendingEvents = "admission.max_pending_events"
	// SettingClaimBatch: start commands claimed in one pass (one transaction).
	SettingClaimBatch = "admission.claim_batch"

	DefaultMaxRunningInstances = 20000
	DefaultMaxPendingEvents    = 1000000
	DefaultClaimBatch          = 64

	DefaultSubWorkflowDepth    = 10
	DefaultInstancesPerRun     = 200
	DefaultVersionsPerWorkflow = 1000
)
