-- The database of this task alone.
CREATE TABLE singer (
    id integer PRIMARY KEY,
    name text NOT NULL,
    country text NOT NULL,
    age integer
);
CREATE TABLE concert (
    id integer PRIMARY KEY,
    singer_id integer NOT NULL REFERENCES singer (id),
    year integer NOT NULL
);
INSERT INTO singer VALUES (1, 'Ana', 'Spain', 30), (2, 'Ben', 'France', 41), (3, 'Cleo', 'Spain', 25);
INSERT INTO concert VALUES (1, 1, 2014), (2, 1, 2015), (3, 2, 2015);
