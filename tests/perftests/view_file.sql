-- as TPC-H Q15 is written: a view, the timed query on it, the view dropped
CREATE VIEW pt_view_{n} AS SELECT number % {n} AS k, sum(number) AS total FROM numbers(10000) GROUP BY k;
SELECT max(total), getSetting('max_block_size') FROM pt_view_{n};
DROP VIEW IF EXISTS pt_view_{n};
