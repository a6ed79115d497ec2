-- `keet lsp` through a real client: Neovim's built-in LSP client (0.7 or
-- later, headless) opens KEET's transpose example, attaches keet lsp with a
-- report of that kernel profiled on another machine, and checks what
-- vim.diagnostic.get(), hover, code lens and code actions (asked as
-- vim.lsp.buf.code_action() asks, then run) give; then a second server with
-- the same kernel built without -lineinfo, whose definition is found by name.
-- Run by tests/lsp/nvim_test.sh.
-- Environment: KEET (the executable), KEET_REPORT, KEET_REPORT_NO_LINEINFO,
-- KEET_SOURCE, KEET_RESULT (a JSON file this script writes: what the client
-- saw, and the failures).
local keet, report, source, result = os.getenv('KEET'), os.getenv('KEET_REPORT'), os.getenv('KEET_SOURCE'),
  os.getenv('KEET_RESULT')
local report_no_lineinfo = os.getenv('KEET_REPORT_NO_LINEINFO')
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

-- What the server shows: Neovim 0.7 writes window/showMessage to the screen,
-- which a headless run loses; keep it here.
local shown = {}
local function start(with_report)
  return vim.lsp.start_client({
    name = 'keet',
    cmd = { keet, 'lsp', with_report },
    root_dir = vim.fn.fnamemodify(source, ':h'),
    handlers = {
      ['window/showMessage'] = function(_, message)
        table.insert(shown, message.message)
      end,
    },
  })
end
local client = start(report)
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

local hot = diagnostics[#diagnostics]
local href = hot and hot.user_data and hot.user_data.lsp.codeDescription and hot.user_data.lsp.codeDescription.href
  or ''
check(href:find('/kb/finding%-memory%.uncoalesced_global%.txt$') ~= nil, 'codeDescription: ' .. href)
check(href == '' or vim.fn.filereadable(vim.uri_to_fname(href)) == 1, 'codeDescription names no file: ' .. href)

local uri = vim.uri_from_bufnr(buf)
local function ask(method, params, from)
  local answers = vim.lsp.buf_request_sync(buf, method, params, 10000) or {}
  local a = answers[from or client]
  return a and a.result
end
-- The code actions on a line's diagnostics, asked as vim.lsp.buf.code_action() does.
local function actions_on(line, from)
  vim.api.nvim_win_set_cursor(0, { line, 0 })
  local params = vim.lsp.util.make_range_params()
  params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(buf, line - 1, {}, from) }
  local titles, by_title = {}, {}
  for _, a in ipairs(ask('textDocument/codeAction', params, from) or {}) do
    table.insert(titles, a.title)
    by_title[a.title] = a
  end
  return titles, by_title
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

local titles, actions = actions_on(move)
check(vim.deep_equal(titles, { 'Explain finding:memory.uncoalesced_global', 'Open the HTML report for this kernel' }),
  'code actions: ' .. vim.inspect(titles))
local explain = actions['Explain finding:memory.uncoalesced_global']
local explained = explain and ask('workspace/executeCommand', explain.command) or ''
check(explained:find('What to do:', 1, true) ~= nil, 'explain: ' .. explained)
local html = actions['Open the HTML report for this kernel']
local html_path = html and ask('workspace/executeCommand', html.command) or ''
check(html_path:find('%.html$') ~= nil and vim.fn.filereadable(html_path) == 1, 'HTML report: ' .. html_path)
-- Neovim 0.7 does not take window/showDocument: the path comes as a message.
check(shown[#shown] == 'keet: the HTML report of transposeNaive is ' .. html_path,
  'last message: ' .. tostring(shown[#shown]))
vim.lsp.stop_client(client)

-- The same kernel built without -lineinfo: found by its name, and told why.
local bare = start(report_no_lineinfo)
check(bare ~= nil, 'the second keet lsp did not start')
vim.lsp.buf_attach_client(buf, bare)
local function gap()
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.code == 'no-lineinfo' then
      return d
    end
  end
end
check(vim.wait(30000, function()
  return gap() ~= nil
end, 50), 'no no-lineinfo diagnostic within 30 s')
local d = gap() or { lnum = -1, message = '' }
check(d.lnum == kernel - 1, 'no-lineinfo diagnostic on line ' .. (d.lnum + 1) .. ', expected ' .. kernel)
check(d.severity == vim.diagnostic.severity.INFO, 'no-lineinfo severity ' .. tostring(d.severity))
check(d.message:find('compile with -lineinfo', 1, true) ~= nil, 'no-lineinfo message: ' .. d.message)
local bare_lenses = ask('textDocument/codeLens', { textDocument = { uri = uri } }, bare) or {}
check(#bare_lenses == 1 and bare_lenses[1].range.start.line == kernel - 1, 'by-name lens: ' .. vim.inspect(bare_lenses))
local bare_titles = actions_on(kernel, bare)
-- "Show SASS of this hot spot" follows where the machine has a CUDA toolkit.
check(bare_titles[1] == 'Explain topic:source_lines' and bare_titles[2] == 'Open the HTML report for this kernel',
  'no-lineinfo code actions: ' .. vim.inspect(bare_titles))

local f = io.open(result, 'w')
f:write(vim.fn.json_encode({
  diagnostics = seen,
  hover = hover_text,
  lens = lens_title,
  actions = titles,
  no_lineinfo = { message = d.message, actions = bare_titles },
  failures = failures,
}))
f:close()
vim.lsp.stop_client(bare)
for _, why in ipairs(failures) do
  io.stderr:write('FAIL: ' .. why .. '\n')
end
vim.cmd(#failures == 0 and 'qall!' or 'cquit 1')
