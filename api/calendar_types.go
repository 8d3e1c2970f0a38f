package api

import (
	"github.com/beluga-scheduler/beluga/common/calendar"
	"github.com/beluga-scheduler/beluga/common/model"
)

// CalendarRequest is the JSON body of PUT .../calendars/{name}; it
// replaces the whole calendar. Weekend nil is Saturday and Sunday; [] is
// no weekend.
type CalendarRequest struct {
	Description string              `json:"description,omitempty"`
	Weekend     []string            `json:"weekend,omitzero"` // mon .. sun; omitzero: [] (no weekend) is sent, nil is not
	Holidays    []model.CalendarDay `json:"holidays,omitempty"`
	Workdays    []model.CalendarDay `json:"workdays,omitempty"` // extra working days (make-up workdays)
	// Version is the calendar's version as read (0: none existed): when
	// set, an edit made since is refused with 409 instead of overwritten.
	Version *int64 `json:"version,omitempty"`
}

// Calendar is a business calendar; Project "" is a shared one.
type Calendar struct {
	ID          int64               `json:"id"`
	Project     string              `json:"project"`
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Weekend     []string            `json:"weekend"`
	Holidays    []model.CalendarDay `json:"holidays"`
	Workdays    []model.CalendarDay `json:"workdays"`
	Version     int64               `json:"version"`
	UpdatedBy   string              `json:"updated_by"`
	CreatedAt   Time                `json:"created_at"`
	UpdatedAt   Time                `json:"updated_at"`
}

func fromCalendar(c model.Calendar) Calendar {
	out := Calendar{ID: c.ID, Project: c.Project, Name: c.Name, Description: c.Description, Weekend: calendar.WeekendNames(c.Weekend),
		Holidays: c.Holidays, Workdays: c.Workdays, Version: c.Version, UpdatedBy: c.UpdatedBy,
		CreatedAt: timeOf(c.CreatedAt), UpdatedAt: timeOf(c.UpdatedAt)}
	if out.Holidays == nil {
		out.Holidays = []model.CalendarDay{}
	}
	if out.Workdays == nil {
		out.Workdays = []model.CalendarDay{}
	}
	return out
}

// Request is the body that PUTs c back as it is, for read-modify-write.
func (c Calendar) Request() CalendarRequest {
	v := c.Version
	weekend := c.Weekend
	if weekend == nil {
		weekend = []string{}
	}
	return CalendarRequest{Description: c.Description, Weekend: weekend, Holidays: c.Holidays, Workdays: c.Workdays, Version: &v}
}
