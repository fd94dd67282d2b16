-- POST {"metadata":{"name":...}} to the URL's collection, a new name every
-- request (run id, wrk thread id, per-thread counter), so no 409s.
-- Args: expected status (default 201), run id (default: the start second,
-- so that runs against the same eco do not collide).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

local headers = { ["Content-Type"] = "application/json" }

function init(args)
  common_init(args)
  run = args[2] or tostring(os.time())
  n = 0
end

function request()
  n = n + 1
  local body = string.format('{"metadata":{"name":"p%s-%d-%d"}}', run, id, n)
  return wrk.format("POST", nil, headers, body)
end
