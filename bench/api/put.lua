-- PUT the same body over existing objects <URL>/<prefix><NNNN>, cycling
-- through `count` of them; wrk thread t takes every t-th one, so two
-- threads never replace the same object at once.
-- Args: expected status (default 200), object name prefix, count.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

local headers = { ["Content-Type"] = "application/json" }

function init(args)
  common_init(args)
  prefix = args[2] or "item-"
  count = tonumber(args[3]) or 1000
  nthreads = tonumber(args[4]) or 1
  base = wrk.path:gsub("/$", "")
  n = 0
end

function request()
  local i = (n * nthreads + id) % count
  n = n + 1
  local name = string.format("%s%04d", prefix, i)
  return wrk.format("PUT", base .. "/" .. name, headers,
                    string.format('{"metadata":{"name":"%s"}}', name))
end
