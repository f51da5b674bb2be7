-- Training workload for bench/realworld.py: the common paths of a Lua program (tables,
-- strings, closures, arithmetic, sorting), nothing rare. Whatever it never reaches, the
-- profile-guided builds move into cold fragments.
local N = tonumber(arg and arg[1]) or 2000

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local t = {}
for i = 1, N do t[i] = (i * 7919) % 1000 end
table.sort(t)
local sum = 0
for _, v in ipairs(t) do sum = sum + v end

local words = {}
for i = 1, N do words[#words + 1] = string.format("w%d", i % 97) end
local text = table.concat(words, " ")
local counts = {}
for w in string.gmatch(text, "%a%d+") do counts[w] = (counts[w] or 0) + 1 end
local upper = string.upper(string.sub(text, 1, 200))
local replaced = string.gsub(text, "w(%d)", "x%1")

local function counter()
  local c = 0
  return function() c = c + 1; return c end
end
local inc = counter()
for _ = 1, N do inc() end

local obj = setmetatable({}, {__index = function(_, k) return k * 2 end})
local acc = 0
for i = 1, N do acc = acc + obj[i] end

print(fib(20), sum, #upper, #replaced, inc(), acc)
