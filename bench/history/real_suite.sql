-- A short suite for issue 27's real bar (bench/history_bars.py --only real): two tables on a
-- 26.9 server, six queries of 20-150 ms; at run 20 the table only `sessions_max` reads grows.
-- name: count_filter
SELECT count() FROM hb.events WHERE user % 7 = 3;
-- name: group_user
SELECT user % 1000 AS u, count(), avg(v) FROM hb.events GROUP BY u ORDER BY u;
-- name: uniq_users
SELECT uniq(user) FROM hb.events;
-- name: url_like
SELECT count() FROM hb.events WHERE url LIKE '%42%';
-- name: top_v
SELECT id FROM hb.events ORDER BY v DESC LIMIT 10;
-- name: sessions_max
SELECT user % 100 AS u, max(dur), avg(dur) FROM hb.sessions GROUP BY u ORDER BY u;
