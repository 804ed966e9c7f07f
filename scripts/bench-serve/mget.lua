-- wrk: GET /mget?k1&k2&... with KEYS uniform random keys out of RECORDS (RocksServer's multi-get).
local records = tonumber(os.getenv("RECORDS") or "1000000")
local keys = tonumber(os.getenv("KEYS") or "300")
local token = os.getenv("TOKEN") or ""
local headers = {}
if token ~= "" then headers["Authorization"] = "Bearer " .. token end

function init(args)
  math.randomseed(os.time() * 1000 + tonumber(tostring({}):sub(8), 16) % 100000)
end

function request()
  local k = {}
  for i = 1, keys do
    k[i] = string.format("%08d", math.random(0, records - 1))
  end
  return wrk.format("GET", "/mget?" .. table.concat(k, "&"), headers)
end
