-- A role and a database for pbem on PostgreSQL. Run it once as the superuser:
--   sudo -u postgres psql -v password="'a long secret'" -f deploy/postgres-setup.sql
-- The role owns its database, so it may create pbem's tables (since PostgreSQL 15
-- only the database owner may create tables in its public schema); it needs no other
-- privilege. pbem makes the tables itself: `pbem db upgrade -c pbem.toml`, or on the
-- first start of `pbem serve`.
CREATE ROLE pbem LOGIN PASSWORD :password;
CREATE DATABASE pbem OWNER pbem ENCODING 'UTF8' TEMPLATE template0;
