-- wrk script: POST batches of 50 canonical events, each with a unique eventId.
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  path = args[1]
  -- Seeded per run: Lua's generator starts the same every time, and a second run against the same
  -- server would send nothing but duplicates.
  math.randomseed(os.time() * 1000 + math.floor(os.clock() * 1e6) % 1000 + tid)
  prefix = tostring(tid) .. "-" .. tostring(math.random(1, 1e9))
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Origin"] = "https://shop.example.com"
end

local names = {"page_view", "product_view", "category_view", "add_to_cart", "search_query"}

-- A paced run (AISLE_BENCH_PAUSE_MS set): each connection waits that long after an answer before
-- its next request, so the rate is about connections / (pause + latency), below the ceiling.
-- Defined only then: wrk schedules every request through a timer once a script has `delay`.
local pause_ms = tonumber(os.getenv("AISLE_BENCH_PAUSE_MS") or "")
if pause_ms then
  function delay()
    return pause_ms
  end
end

function request()
  counter = counter + 1
  local parts = {}
  local visitor = prefix .. "-v" .. tostring(counter % 500)
  for i = 1, 50 do
    local name = names[(i % #names) + 1]
    parts[i] = '{"name":"' .. name .. '","eventId":"' .. prefix .. "-" .. counter .. "-" .. i ..
      '","visitorId":"' .. visitor .. '","sessionId":"s' .. counter .. '","url":"https://shop.example.com/p/' .. i ..
      '","metadata":{"productItemCode":"SKU-' .. i .. '","categoryPath":"Home > Kitchen"}}'
  end
  return wrk.format(nil, path, nil, '{"events":[' .. table.concat(parts, ",") .. ']}')
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d duration_us=%d errors_status=%d errors_connect=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, summary.errors.status, summary.errors.connect,
    latency:percentile(50), latency:percentile(99)))
end
