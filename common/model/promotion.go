package model

import "time"

// GrantApprove is the level that may approve or reject change requests
// into a project (README, "Promotion with review"): edit, and review.
const GrantApprove = "approve"

// EventPromotion is the event of a promotion step in a target project:
// state drift (a gated workflow edited outside promotion; its detail
// names the workflow and versions), which the master alerts.
const EventPromotion = "promotion"

// Change request states. An approval applies the request in the same
// transaction, so an approved request is applied (or the approval failed
// and it is still open).
const (
	RequestOpen     = "open"
	RequestApplied  = "applied"
	RequestRejected = "rejected"
)

// PromotionGate is a target project's promotion setting.
type PromotionGate struct {
	Project string
	// SourceProject is where its change requests come from ("": any
	// project the author may edit).
	SourceProject string
	// RequireReview gates the project: its schedules run the latest
	// promoted version of each workflow, never a direct edit.
	RequireReview bool
	AlertChannels []string // told once per drift
	UpdatedBy     string
	UpdatedAt     time.Time
}

// ChangeRequest proposes one source workflow version for a target project.
type ChangeRequest struct {
	ID             int64
	TargetProject  string
	Workflow       string
	SourceProject  string
	SourceVersion  int
	SourceHash     string
	SpecJSON       []byte // the source version's spec, secrets sealed, as reviewed
	BaseVersion    int    // the target's latest version when requested (0: none)
	Message        string
	Author         string
	State          string
	Reviewer       string
	ReviewComment  string
	AppliedVersion int // the target version an approval made
	CreatedAt      time.Time
	ReviewedAt     *time.Time
}

// Drift is a promotion-gated workflow edited outside promotion.
type Drift struct {
	Project         string
	Workflow        string
	SinceVersion    int // the first version edited so
	PromotedVersion int // the version its schedules run
	EditedBy        string
	DetectedAt      time.Time
}
