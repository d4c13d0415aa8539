-- What the agent role may do in the shop database: read and change rows of every
-- table, create its own tables, views and functions in schema shop. It cannot drop,
-- alter or disable anything it does not own (constraints, triggers, other tables).
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA shop TO agent;
GRANT SELECT, INSERT, UPDATE, DELETE, REFERENCES ON ALL TABLES IN SCHEMA shop TO agent;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA shop TO agent;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA shop TO agent;
