-- GET of the URL given to wrk (one object, or a whole collection).
-- Args: expected status (default 200).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

function init(args)
  common_init(args)
end
