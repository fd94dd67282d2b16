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
