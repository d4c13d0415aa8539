-- Spare databases for the grading container (created here so that grading never waits
-- for CREATE DATABASE): gold, a copy of the pristine shop database where the gold SQL is
-- replayed, and final, an empty database the agent's exported state is restored into as
-- the agent role. pg_hba.conf lets only the server's own OS user connect to them, so
-- the agent (in its own container) cannot reach them.
CREATE DATABASE gold OWNER postgres TEMPLATE shop;
REVOKE ALL ON DATABASE gold FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE gold TO agent;
CREATE DATABASE final OWNER postgres TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8';
REVOKE ALL ON DATABASE final FROM PUBLIC;
GRANT CONNECT, CREATE, TEMPORARY ON DATABASE final TO agent;
