-- User names are stored trimmed and lower-cased (store.NormalUserName) and
-- compared exactly: "Admin", "ADMIN " and "admin" are one user, and one key
-- of the login limiter. The unique key's collation (case- and trailing
-- space-insensitive) already kept two such spellings from both existing, so
-- folding the ones stored before cannot collide.
UPDATE app_user SET name = LOWER(TRIM(name)) WHERE BINARY name <> BINARY LOWER(TRIM(name));
