-- Shared by the wrk scripts of bench/api: checks every response's status
-- against the expected one (first script argument) and prints one
-- machine-readable RESULT line for run.sh.
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function common_init(args)
  expected = tonumber(args[1]) or 200
  bad = 0          -- responses whose status is not `expected`
  first_bad = 0    -- the first such status, for the report
end

function response(status, headers, body)
  if status ~= expected then
    bad = bad + 1
    if first_bad == 0 then first_bad = status end
  end
end

function done(summary, latency, requests)
  local nbad, first = 0, 0
  for _, t in ipairs(threads) do
    nbad = nbad + t:get("bad")
    if first == 0 then first = t:get("first_bad") end
  end
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    "RESULT rps=%.1f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f requests=%d bad=%d first_bad=%d " ..
    "sock_errors=%d timeouts=%d\n",
    summary.requests / secs, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, summary.requests, nbad, first,
    e.connect + e.read + e.write, e.timeout))
end

-- Paced mode, for latency at a given rate rather than at saturation:
-- ECO_BENCH_RATE = target req/s in total, ECO_BENCH_THREADS = wrk threads.
-- Each thread hands out send slots at exponentially distributed intervals
-- (Poisson arrivals); a connection ready to send waits for the next slot.
-- Slots missed by less than 1 s are caught up; a request stuck behind a
-- slow one is still timed from when it was sent (wrk's closed loop), so
-- p99 here understates what an open-loop client would see during stalls.
local rate = tonumber(os.getenv("ECO_BENCH_RATE") or "")
if rate and rate > 0 then
  local ffi = require("ffi")
  ffi.cdef[[
    struct eco_timespec { long tv_sec; long tv_nsec; };
    int clock_gettime(int clk, struct eco_timespec *tp);
  ]]
  local ts = ffi.new("struct eco_timespec")
  local function now_ms()
    ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
  end
  local mean_ms = 1000 * (tonumber(os.getenv("ECO_BENCH_THREADS") or "") or 1) / rate
  local next_slot = nil
  function delay()
    local now = now_ms()
    if next_slot == nil or next_slot < now - 1000 then next_slot = now end
    next_slot = next_slot - math.log(1 - math.random()) * mean_ms
    local wait = next_slot - now
    if wait < 0 then return 0 end
    return math.floor(wait + 0.5)
  end
end
