-- now: the master's own clock, in ms (scripts replicate as effects, so reading TIME is allowed).
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
