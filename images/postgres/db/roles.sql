-- Roles and the database (run as the superuser in the maintenance database).
-- shop_owner owns the schema and every object in it and cannot log in. agent is what the
-- agent connects as: not a superuser, no CREATEDB/CREATEROLE, owns nothing; it is
-- granted privileges in grants.sql, and a task may hand it ownership of the tables it is
-- asked to migrate (at reset). Its time limits are defaults the tool also enforces.
CREATE ROLE shop_owner NOLOGIN;
CREATE ROLE agent LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    CONNECTION LIMIT 8;
ALTER ROLE agent SET statement_timeout = '30s';
ALTER ROLE agent SET lock_timeout = '5s';
ALTER ROLE agent SET idle_in_transaction_session_timeout = '30s';
ALTER ROLE agent SET search_path = shop, public;
CREATE DATABASE shop OWNER postgres TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8';
REVOKE ALL ON DATABASE shop FROM PUBLIC;
REVOKE ALL ON DATABASE postgres FROM PUBLIC;
REVOKE ALL ON DATABASE template1 FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE shop TO agent;
