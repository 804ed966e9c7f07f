-- wrk: GET /get?<key> with a uniform random key out of RECORDS (8-digit decimal keys).
-- The request text is built once with a %08d hole: per request only the key is formatted, so
-- the client spends as little CPU as it can on a 2-core machine it shares with the server.
local records = tonumber(os.getenv("RECORDS") or "1000000")
local token = os.getenv("TOKEN") or ""
local headers = {}
if token ~= "" then headers["Authorization"] = "Bearer " .. token end
local counter = 0
local template

function init(args)
  counter = counter + 1
  math.randomseed(os.time() * 1000 + counter + tonumber(tostring({}):sub(8), 16) % 100000)
  template = wrk.format("GET", "/get?%08d", headers)
end

function request()
  return string.format(template, math.random(0, records - 1))
end
