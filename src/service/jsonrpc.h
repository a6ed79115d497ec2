// JSON-RPC 2.0 pieces the MCP server (mcp.cc) and the Language Server
// (lsp.cc) share: the error codes and the response builders.
#pragma once
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace keet::service::jsonrpc {

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;  // LSP's own

inline nlohmann::json error(const nlohmann::json& id, int code, std::string message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", std::move(message)}}}};
}
inline nlohmann::json result(const nlohmann::json& id, nlohmann::json value) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(value)}};
}
inline nlohmann::json notification(std::string method, nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"method", std::move(method)}, {"params", std::move(params)}};
}

}  // namespace keet::service::jsonrpc
