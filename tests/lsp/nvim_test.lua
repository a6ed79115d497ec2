-- `keet lsp` through a real client: Neovim's built-in LSP client (0.7 or
-- later, headless) opens KEET's transpose example, attaches keet lsp with a
-- report of that kernel profiled on another machine, and checks what
-- vim.diagnostic.get(), hover and code lens give. Run by tests/lsp/nvim_test.sh.
-- Environment: KEET (the executable), KEET_REPORT, KEET_SOURCE, KEET_RESULT
-- (a JSON file this script writes: what the client saw, and the failures).
local keet, report, source, result = os.getenv('KEET'), os.getenv('KEET_REPORT'), os.getenv('KEET_SOURCE'),
  os.getenv('KEET_RESULT')
local failures = {}
local function check(ok, what)
  if not ok then
    table.insert(failures, what)
  end
end

vim.cmd('edit ' .. vim.fn.fnameescape(source))
local buf = vim.api.nvim_get_current_buf()
local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local function line_of(text)
  for i, l in ipairs(lines) do
    if l:find(text, 1, true) then
      return i
    end
  end
  return -1
end
local move, x, kernel = line_of('out[x * N + y]'), line_of('int x ='), line_of('__global__ void transposeNaive')

local client = vim.lsp.start_client({
  name = 'keet',
  cmd = { keet, 'lsp', report },
  root_dir = vim.fn.fnamemodify(source, ':h'),
})
check(client ~= nil, 'keet lsp did not start')
vim.lsp.buf_attach_client(buf, client)
check(vim.wait(30000, function()
  return #vim.diagnostic.get(buf) > 0
end, 50), 'no diagnostics within 30 s')

local seen = {}
local diagnostics = vim.diagnostic.get(buf)
table.sort(diagnostics, function(a, b)
  return a.lnum < b.lnum
end)
for _, d in ipairs(diagnostics) do
  table.insert(seen, { line = d.lnum + 1, severity = d.severity, source = d.source, message = d.message })
end
check(#seen == 2, 'expected 2 diagnostics, got ' .. #seen)
if #seen == 2 then
  check(seen[1].line == x, 'first diagnostic on line ' .. seen[1].line .. ', expected ' .. x)
  check(seen[2].line == move, 'second diagnostic on line ' .. seen[2].line .. ', expected ' .. move)
  check(seen[2].message:find('90.0% of transposeNaive', 1, true) ~= nil, 'hot line message: ' .. seen[2].message)
  check(seen[2].severity == vim.diagnostic.severity.INFO, 'hot line severity ' .. tostring(seen[2].severity))
  check(seen[1].severity == vim.diagnostic.severity.HINT, 'index line severity ' .. tostring(seen[1].severity))
end

local uri = vim.uri_from_bufnr(buf)
local function ask(method, params)
  local answers = vim.lsp.buf_request_sync(buf, method, params, 10000) or {}
  local a = answers[client]
  return a and a.result
end
local hover = ask('textDocument/hover', { textDocument = { uri = uri }, position = { line = move - 1, character = 2 } })
local hover_text = hover and hover.contents and hover.contents.value or ''
check(hover_text:find('this line: **90.0%** of the kernel\'s stall samples (900 of 1000)', 1, true) ~= nil,
  'hover: ' .. hover_text)
local lenses = ask('textDocument/codeLens', { textDocument = { uri = uri } }) or {}
check(#lenses == 1, 'expected 1 code lens, got ' .. #lenses)
local lens_title = ''
if #lenses == 1 then
  lens_title = lenses[1].command.title
  check(lenses[1].range.start.line == kernel - 1, 'code lens on line ' .. (lenses[1].range.start.line + 1))
  check(lens_title:find('memory-bound', 1, true) ~= nil, 'code lens: ' .. lens_title)
end

local f = io.open(result, 'w')
f:write(vim.fn.json_encode({ diagnostics = seen, hover = hover_text, lens = lens_title, failures = failures }))
f:close()
vim.lsp.stop_client(client)
for _, why in ipairs(failures) do
  io.stderr:write('FAIL: ' .. why .. '\n')
end
vim.cmd(#failures == 0 and 'qall!' or 'cquit 1')
