-- User names are stored trimmed and lower-cased (store.NormalUserName) and
-- compared exactly: "Admin", "ADMIN " and "admin" are one user, and one key
-- of the login limiter. PostgreSQL compared names exactly before, so "Alice" and
-- "alice" may both exist: a name that folds onto another is left as it is
-- (it can no longer log in; an admin deletes one or the other).
UPDATE app_user SET name = lower(trim(name))
WHERE name <> lower(trim(name))
  AND NOT EXISTS (SELECT 1 FROM app_user o WHERE o.id <> app_user.id AND lower(trim(o.name)) = lower(trim(app_user.name)));
