-- wrk: GET /get?<key> with a uniform random key out of RECORDS (8-digit decimal keys).
local records = tonumber(os.getenv("RECORDS") or "1000000")
local token = os.getenv("TOKEN") or ""
local headers = {}
if token ~= "" then headers["Authorization"] = "Bearer " .. token end
local counter = 0

function init(args)
  counter = counter + 1
  math.randomseed(os.time() * 1000 + counter + tonumber(tostring({}):sub(8), 16) % 100000)
end

function request()
  return wrk.format("GET", string.format("/get?%08d", math.random(0, records - 1)), headers)
end
