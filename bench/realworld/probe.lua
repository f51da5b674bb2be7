-- Probe workload for bench/realworld.py's debugger check: the training workload's paths plus
-- the rare ones it never took (errors raised and caught, type errors, utf8, string.rep limits,
-- coroutines, os/io), so the run reaches code the profile-guided builds moved out of line.
local function try(f, ...) local ok, err = pcall(f, ...) return ok, err end

for _ = 1, 3 do
  try(function() return nil + 1 end)
  try(function() local t = nil; return t.x end)
  try(function() return #5 end)
  try(function() return ("x"):rep(-1, 5) .. {} end)
  try(string.rep, "x", 1 << 40)
  try(function() error({code = 1}) end)
  try(function() return 1 < "2" end)
  try(function() return math.tointeger("x") // 0 end)
  try(function() return 1 // 0 end)
  try(setmetatable, 1, {})
  try(string.format, "%d", 1.5)
  try(utf8.char, -1)
  try(function() return utf8.len("\xff") end)
  local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1); error("in co " .. b) end)
  try(co, 1); try(co, 2)
  try(load, "return +")
  try(function() return load("x = = 1")() end)
  try(function() local s = string.pack("i4", 7); return string.unpack("i8", s) end)
  try(os.date, "%Ez")
  try(io.open, "/nonexistent/file")
  try(function() return select(-5, 1) end)
  try(function() return table.concat({1, {}, 3}) end)
  try(function() return tostring(setmetatable({}, {__tostring = function() return 1 end})) end)
end
print("probe done")
