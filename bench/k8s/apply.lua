-- wrk script: server-side applies spread over kube-sim's clusters.
-- Each request applies ConfigMap cm-<k> in cluster-<n> with a changed value,
-- so every apply is a real update (the first of each name a create).
-- Env: CLUSTERS (default 1000), NAMES per cluster (default 10), PREFIX.
local clusters = tonumber(os.getenv("CLUSTERS") or "1000")
local names = tonumber(os.getenv("NAMES") or "10")
local prefix = os.getenv("PREFIX") or "cluster-"
local counter = 0
local thread_id = 0

function setup(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

function init(args)
  counter = thread_id * 7919
end

function request()
  counter = counter + 1
  local c = (counter % clusters) + 1
  local k = (math.floor(counter / clusters) % names) + 1
  local path = "/clusters/" .. prefix .. c .. "/api/v1/namespaces/default/configmaps/cm-" .. k ..
               "?fieldManager=bench&force=true"
  local body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-' .. k ..
               '","namespace":"default","labels":{"app":"bench"}},"data":{"seq":"' .. counter .. '"}}'
  return wrk.format("PATCH", path, {["Content-Type"] = "application/apply-patch+yaml"}, body)
end

function response(status, headers, body)
  if status ~= 200 and status ~= 201 then
    print("unexpected status " .. status .. ": " .. body)
  end
end
