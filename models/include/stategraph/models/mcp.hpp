// SPDX-License-Identifier: MIT
#pragma once
// A client of the Model Context Protocol: the tools of MCP servers as sg::Tools (LangChain's
// MultiServerMCPClient and loadMcpTools, from @langchain/mcp-adapters).
//
//   sg::McpClient client(nlohmann::json::parse(R"({"mcpServers": {
//       "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
//       "/tmp"]}, "search": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer
//       ..."}}
//   }})"));
//   std::vector<sg::Tool> tools = client.get_tools();
//   auto agent = sg::create_react_agent(model, tools);
//
// Servers are reached over stdio (a child process speaking newline-delimited JSON-RPC), Streamable
// HTTP (the current transport) or the legacy HTTP+SSE transport. All I/O runs on one thread the
// client owns, on Boost.Asio: a call waiting for a server holds no thread, and the asynchronous
// calls resume on the caller's executor. The tools are asynchronous (Tool::AsyncFn); ToolNode and
// create_react_agent use them as any tool. See docs/models.md, "MCP tools".

#include <stategraph/core/error.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/models/tool.hpp>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Boost.Asio's awaitable headers (Boost 1.74 omits it)
#include <vector>

namespace sg {

namespace errc {
/// A server could not be started or reached, exited, or the connection broke.
inline constexpr std::string_view kMcpConnection = "mcp.connection";
/// A request got no answer within its timeout.
inline constexpr std::string_view kMcpTimeout = "mcp.timeout";
/// The server broke the protocol: malformed JSON-RPC, an unsupported protocol version, a result
/// of the wrong shape.
inline constexpr std::string_view kMcpProtocol = "mcp.protocol";
/// An HTTP server answered with a status that is an error (4xx, 5xx).
inline constexpr std::string_view kMcpHttpStatus = "mcp.http_status";
/// The server answered a request with a JSON-RPC error.
inline constexpr std::string_view kMcpServerError = "mcp.server_error";
/// A tool call's result had `isError: true` (LangChain's ToolException).
inline constexpr std::string_view kMcpToolError = "mcp.tool_error";
}  // namespace errc

/// A failure of an MCP server or of the protocol; `code()` is one of the errc::kMcp* codes and
/// `what()` names the server. Thread-safe to read.
class McpError : public Error {
 public:
  McpError(std::string_view code, const std::string& message, std::string server = {},
           int http_status = 0, int rpc_code = 0)
      : Error(code, message),
        server_(std::move(server)),
        http_status_(http_status),
        rpc_code_(rpc_code) {}
  /// The server's name in the client's configuration (empty when not known).
  [[nodiscard]] const std::string& server() const noexcept { return server_; }
  /// The HTTP status of errc::kMcpHttpStatus; 0 otherwise.
  [[nodiscard]] int http_status() const noexcept { return http_status_; }
  /// The JSON-RPC error code of errc::kMcpServerError; 0 otherwise.
  [[nodiscard]] int rpc_code() const noexcept { return rpc_code_; }

 private:
  std::string server_;
  int http_status_ = 0;
  int rpc_code_ = 0;
};

/// How a server is reached.
enum class McpTransport : std::uint8_t {
  stdio,            ///< a child process: JSON-RPC lines on its stdin and stdout
  streamable_http,  ///< POST each message to `url`; replies as JSON or SSE
  sse,              ///< the legacy HTTP+SSE transport (protocol 2024-11-05)
};

/// What becomes of a stdio server's stderr.
enum class McpStderr : std::uint8_t {
  inherit,  ///< the client process's stderr (the official SDKs' default)
  log,      ///< each line through sg::log (info); the last lines also go into exit errors
  ignore,   ///< /dev/null
};

/// One server of the `mcpServers` configuration. A value type.
struct McpServerConfig {
  McpTransport transport = McpTransport::stdio;
  // stdio
  /// The program (searched on the PATH of the server's environment when it has no '/').
  std::string command{};
  std::vector<std::string> args{};
  /// Set in the server's environment, over the variables it inherits (see inherit_environment).
  std::map<std::string, std::string> env{};
  /// The server's working directory (empty: the client's).
  std::string cwd{};
  /// False (as the official SDKs): the server inherits only HOME, LOGNAME, PATH, SHELL, TERM and
  /// USER, so that the client's secrets do not leak to it. True: the whole environment.
  bool inherit_environment = false;
  McpStderr stderr_mode = McpStderr::inherit;
  // HTTP
  /// `http://` or `https://` (Streamable HTTP: the MCP endpoint; sse: the event stream).
  std::string url{};
  /// Sent with every request (e.g. Authorization).
  std::map<std::string, std::string> headers{};
  // Timeouts (0: none).
  /// Starting the server and the initialize handshake.
  std::chrono::milliseconds connect_timeout{30'000};
  /// Each request (tools/call: see tool_timeout).
  std::chrono::milliseconds request_timeout{60'000};
  /// tools/call (the server's defaultToolTimeout); 0: McpClientOptions::tool_timeout, else
  /// request_timeout.
  std::chrono::milliseconds tool_timeout{0};
  /// stdio: how long closing waits for the server to exit after closing its stdin, then after
  /// SIGTERM, before SIGKILL.
  std::chrono::milliseconds shutdown_timeout{2'000};
};

/// A progress notification of a tool call (the adapters' onProgress arguments).
struct McpProgress {
  std::string server{};
  /// The tool's name on its server (not prefixed).
  std::string tool{};
  nlohmann::json args{};
  double progress = 0;
  std::optional<double> total{};
  std::string message{};
};

/// Where a kind of MCP content goes in the ToolMessage (the adapters' outputHandling).
enum class McpOutput : std::uint8_t { content, artifact };

/// Options of an McpClient, as the adapters' client options. A value type.
struct McpClientOptions {
  /// Tool names become "<server>__<tool>" (prefixToolNameWithServerName).
  bool prefix_tool_name_with_server_name = false;
  /// Tool names become "<prefix>__..." (additionalToolNamePrefix).
  std::string additional_tool_name_prefix{};
  /// Images as LangChain's standard blocks (`{type: image, source_type: base64, ...}`) instead
  /// of `image_url` data URLs; embedded resources as file blocks (useStandardContentBlocks).
  bool use_standard_content_blocks = false;
  /// Per MCP content type ("text", "image", "audio", "resource", "resource_link"): content or
  /// artifact. Unlisted types: "resource" goes to the artifact, the others to the content.
  std::map<std::string, McpOutput> output_handling{};
  /// The timeout of a tool call (defaultToolTimeout) on servers without a tool_timeout of their
  /// own; 0: their request_timeout.
  std::chrono::milliseconds tool_timeout{0};
  /// Called with each progress notification of a tool call (onProgress), on the client's I/O
  /// thread: it must not block, nor call the client's blocking functions.
  std::function<void(const McpProgress&)> on_progress{};
  /// Also write each progress notification to the run's `custom` stream, when the tool runs in a
  /// graph node: `{"type": "mcp_progress", "server", "tool", "progress", "total", "message"}`.
  bool stream_progress = false;
  /// Called (on the I/O thread) after a server's tool list changed and was read again
  /// (onToolsListChanged); call get_tools() for the new tools.
  std::function<void(const std::string& server)> on_tools_changed{};
  /// Skip servers that fail to connect in get_tools() (onConnectionError "ignore"), logging why,
  /// instead of throwing.
  bool ignore_connection_errors = false;
  /// The clientInfo sent in initialize.
  std::string client_name = "stategraph";
  std::string client_version{};  // empty: stategraph's version
};

/// A parsed `mcpServers` configuration.
struct McpConfig {
  std::map<std::string, McpServerConfig> servers{};
  McpClientOptions options{};
};

/// Parses the configuration MCP clients share, with the adapters' options:
/// `{"mcpServers": {"name": {"command", "args", "env", "cwd", "stderr"} | {"url", "headers",
/// "transport"}}, "prefixToolNameWithServerName", "additionalToolNamePrefix",
/// "useStandardContentBlocks", "outputHandling", "defaultToolTimeout", "onConnectionError",
/// "streamProgress"}`, or the server map alone (then without those options). "transport" (or
/// "type") is "stdio", "http"
/// ("streamable_http", "streamable-http", "streamableHttp") or "sse"; without it, `command`
/// means stdio and `url` Streamable HTTP. A server may give "defaultToolTimeout" (ms) of its
/// own. Unknown keys are ignored. Throws sg::Error (errc::kInvalidArgument) naming the bad field
/// (`mcpServers.fs.args[1]: expected a string`). Thread-safe.
[[nodiscard]] McpConfig parse_mcp_config(const nlohmann::json& config);

/// The JSON of an `mcpServers` file (what `stategraph chat --mcp` and `stategraph serve --mcp`
/// read), checked with parse_mcp_config. Throws sg::Error (errc::kInvalidArgument) naming the file
/// when it cannot be read, is not JSON or is not such a configuration. Thread-safe.
[[nodiscard]] nlohmann::json read_mcp_config_file(const std::filesystem::path& path);

/// Options of one call.
struct McpCallOptions {
  /// Cancelling it ends the call with CancelledError and tells the server
  /// (notifications/cancelled). A tool also follows its run's token.
  CancellationToken cancellation{};
  /// 0: the server's tool_timeout, else the client's, else the server's request_timeout.
  std::chrono::milliseconds timeout{0};
  /// Progress of this call (the request then carries a progressToken).
  std::function<void(const McpProgress&)> on_progress{};
};

/// What a server said about itself when it was initialized.
struct McpServerInfo {
  std::string protocol_version{};
  nlohmann::json server_info{};  // {name, version, title?}
  nlohmann::json capabilities{};
  std::string instructions{};
};

namespace detail {
class McpClientCore;
}

/// Clients of several MCP servers (LangChain's MultiServerMCPClient). A server is connected on
/// first use (initialize, capability and protocol version negotiation) and stays connected;
/// a server that exited or whose HTTP session expired is connected again on the next call.
/// Destroying the client (or close()) ends the sessions: a stdio server gets its stdin closed,
/// then SIGTERM, then SIGKILL (each after shutdown_timeout); an HTTP session gets a DELETE. The
/// tools it handed out then fail with McpError (errc::kMcpConnection), as the adapters' do after
/// close(); load_mcp_tools() gives tools that keep their client open instead.
/// Thread-safe: every function may be called from any thread, and the asynchronous ones from any
/// executor (they resume there). The blocking ones must not be called from the client's I/O
/// thread (an on_progress callback): sg::Error (errc::kInvalidArgument) if they are. The client
/// and its tools may be destroyed there: the sessions then end without waiting, and another
/// thread ends the I/O thread once the last of them is gone.
class McpClient {
 public:
  /// Throws sg::Error (errc::kInvalidArgument) for no servers or a bad server configuration
  /// (an empty name, a stdio server without command, an HTTP server with a URL that is not
  /// http(s)). Starts nothing yet.
  explicit McpClient(std::map<std::string, McpServerConfig> servers, McpClientOptions options = {});
  /// From the JSON configuration (parse_mcp_config). Throws as it does.
  explicit McpClient(const nlohmann::json& config);
  explicit McpClient(McpConfig config);
  ~McpClient();
  McpClient(McpClient&&) noexcept;
  McpClient& operator=(McpClient&&) noexcept;
  McpClient(const McpClient&) = delete;
  McpClient& operator=(const McpClient&) = delete;

  /// The tools of every server (or of `servers`), in configuration order, each server's in its
  /// order: connects those not connected, lists their tools (all pages) once and after each
  /// notifications/tools/list_changed. A tool calls its server by name at call time, so a tool
  /// handed out earlier keeps working across list changes while the server still has it; call
  /// get_tools() again to see added or removed tools. Throws McpError (naming the server) when a
  /// server cannot be connected (unless ignore_connection_errors), sg::Error
  /// (errc::kInvalidArgument) for an unknown server name. Blocks.
  [[nodiscard]] std::vector<Tool> get_tools(const std::vector<std::string>& servers = {});
  /// get_tools() on the caller's executor, holding no thread while it waits.
  [[nodiscard]] boost::asio::awaitable<std::vector<Tool>> aget_tools(
      std::vector<std::string> servers = {});

  /// The server's tools as it lists them (all pages): `[{name, description, inputSchema, ...}]`.
  /// Throws McpError. Blocks.
  [[nodiscard]] std::vector<nlohmann::json> list_tools(const std::string& server);
  /// Calls a tool and returns the MCP result as it came (`{content, structuredContent?,
  /// isError?}`; an isError result is returned, not thrown). Throws McpError (a JSON-RPC error,
  /// a timeout, the server exiting...), CancelledError. Blocks.
  [[nodiscard]] nlohmann::json call_tool(const std::string& server, const std::string& tool,
                                         const nlohmann::json& args,
                                         const McpCallOptions& options = {});
  /// call_tool() on the caller's executor, holding no thread while it waits.
  [[nodiscard]] boost::asio::awaitable<nlohmann::json> acall_tool(std::string server,
                                                                  std::string tool,
                                                                  nlohmann::json args,
                                                                  McpCallOptions options = {});
  /// Sends a ping and waits for the answer. Throws McpError. Blocks.
  void ping(const std::string& server);
  /// What the server said in initialize (connects it first). Throws McpError. Blocks.
  [[nodiscard]] McpServerInfo server_info(const std::string& server);
  /// The configured server names, in order.
  [[nodiscard]] std::vector<std::string> servers() const;
  /// Ends every session (see the class comment) and waits for it; later calls throw McpError
  /// (errc::kMcpConnection). Idempotent. Blocks: on the client's I/O thread, sg::Error
  /// (errc::kInvalidArgument) unless already closed (destroy the client there instead).
  void close();

 private:
  std::shared_ptr<detail::McpClientCore> core_;
};

/// The tools of the servers of an `mcpServers` configuration (parse_mcp_config), connected:
/// what `stategraph serve` and `stategraph chat --mcp` load. The tools keep their client alive;
/// its sessions end when the last tool is destroyed. Throws as parse_mcp_config and
/// McpClient::get_tools. Blocks.
[[nodiscard]] std::vector<Tool> load_mcp_tools(const nlohmann::json& config);

}  // namespace sg
