-- Business calendars: the dates a schedule's fires honour (calendar and
-- on_holiday on the schedule). project_id 0 is a shared calendar, readable
-- by every project and written by admins; a project's own calendar of the
-- same name comes first for its schedules. weekend lists the weekday
-- numbers that are not business days (0 Sunday .. 6 Saturday); days_json
-- holds the holidays and the extra working days (make-up workdays), each a
-- date and an optional name. A calendar a schedule names is not deleted.
CREATE TABLE calendar (
  id          BIGINT AUTO_INCREMENT PRIMARY KEY,
  project_id  BIGINT NOT NULL DEFAULT 0,
  name        VARCHAR(128) NOT NULL,
  description VARCHAR(1024) NOT NULL DEFAULT '',
  weekend     VARCHAR(32) NOT NULL DEFAULT '',
  days_json   MEDIUMTEXT,
  version     BIGINT NOT NULL DEFAULT 1,
  updated_by  VARCHAR(255) NOT NULL DEFAULT '',
  created_at  DATETIME(6) NOT NULL,
  updated_at  DATETIME(6) NOT NULL,
  UNIQUE KEY uk_calendar_name (project_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

ALTER TABLE schedule ADD COLUMN calendar VARCHAR(128) NOT NULL DEFAULT '';
ALTER TABLE schedule ADD COLUMN on_holiday VARCHAR(32) NOT NULL DEFAULT '';
CREATE INDEX idx_schedule_calendar ON schedule (calendar);
