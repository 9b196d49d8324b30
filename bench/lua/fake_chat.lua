-- wrk load: the fake agent's POST /v1/chat/completions, straight, with the body hermes-mcp sends
-- for the hermes_task load (captured by bench/run.sh into BENCH_BODY_FILE) and its
-- X-Hermes-Session-Id (BENCH_SESSION): the baseline a proxied hermes_task is compared with.
-- Good response: HTTP 200 whose SSE stream ends with "data: [DONE]". BENCH_TOKEN is the agent key.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
wrk.path = "/v1/chat/completions"
wrk.headers["Accept"] = "text/event-stream"
wrk.headers["X-Hermes-Session-Id"] = os.getenv("BENCH_SESSION") or "gb-task-bench-direct"
local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
wrk.body = f:read("*a")
f:close()

function bad(status, body)
  return status ~= 200 or not body:find("data: [DONE]", 1, true)
end
