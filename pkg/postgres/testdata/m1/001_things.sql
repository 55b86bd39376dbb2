CREATE TABLE things (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE, n int CHECK (n >= 0));
