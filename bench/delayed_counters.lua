-- SPDX-License-Identifier: Apache-2.0
-- delayed_counters.lua - sysbench driver of bench/delayed_counters.py (BENCH_DRIVER=sysbench):
-- each sysbench thread holds one connection and sends, one at a time and as plain text
-- (COM_QUERY, no prepared statement), the statement given by --stmt with %d replaced by
-- an id drawn uniformly from 1..--hot. One event is one statement, so sysbench's event
-- count is the number of acknowledged statements (an error stops the run).
sysbench.cmdline.options = {
    stmt = {"statement with one %d for the id", "UPDATE counters SET hits = hits + 1 WHERE id = %d"},
    hot = {"ids drawn from 1..hot", 1},
}

function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
end

function event()
    con:query(string.format(sysbench.opt.stmt, sysbench.rand.uniform(1, sysbench.opt.hot)))
end

function thread_done()
    con:disconnect()
end
