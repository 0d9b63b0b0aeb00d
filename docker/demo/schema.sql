-- docker/demo/schema.sql - the demo schema of scripts/run.sh and docker/compose.yml:
-- a counters table (delayed rule), a listing of 10^6 rows with a secondary index
-- (paginate rule) and a queue table (queue rule); see docker/demo/rules/demo.rules.
-- The rows come from MariaDB's sequence engine, so the whole build takes seconds.
-- Starts from scratch: demo.setup_done, created last, tells a finished build, so a
-- build cut short is simply redone.
DROP DATABASE IF EXISTS demo;
CREATE DATABASE demo;
USE demo;

-- hot counters: UPDATE DELAYED c... SET n = n + 1 is staged, then added in batches
CREATE TABLE counters (
    id INT PRIMARY KEY,
    n BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB;
INSERT INTO counters (id, n) SELECT seq, 0 FROM seq_1_to_100;

-- a listing read page by page: ORDER BY created, id over the index on created.
-- created is a permutation of 10^6 values, unrelated to id.
CREATE TABLE listing (
    id INT PRIMARY KEY,
    created INT NOT NULL,
    price INT NOT NULL,
    title VARCHAR(120) NOT NULL,
    KEY created (created)
) ENGINE=InnoDB;
INSERT INTO listing (id, created, price, title)
    SELECT seq, 1700000000 + (seq * 7919) % 1000000, seq % 997,
           CONCAT('item ', seq, ' ', REPEAT('x', 80))
    FROM seq_1_to_1000000;

-- a queue: workers claim rows with their connection id; the proxy gives the
-- claims of a worker that went away back
CREATE TABLE jobs (
    id INT AUTO_INCREMENT PRIMARY KEY,
    status VARCHAR(16) NOT NULL DEFAULT 'ready',
    owner BIGINT NOT NULL DEFAULT 0,
    claimed_at DATETIME(6) NULL,
    payload VARCHAR(100) NOT NULL,
    KEY status_owner (status, owner)
) ENGINE=InnoDB;
INSERT INTO jobs (payload) SELECT CONCAT('job ', seq) FROM seq_1_to_100;

CREATE TABLE setup_done (done_at DATETIME NOT NULL);
INSERT INTO setup_done VALUES (NOW());
