// SPDX-License-Identifier: MIT
// `stategraph graph` run as a real process: Mermaid and DOT of the built-in graphs, SVG and PNG
// rendered by Graphviz in-process, -o, --list, and one-line usage errors with exit code 2.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

sg::test::ProcessResult graph_cli(const std::vector<std::string>& args) {
  std::vector<std::string> all{"graph"};
  all.insert(all.end(), args.begin(), args.end());
  return sg::test::run_process(SG_CLI_PATH, all, "");
}

/// The edges of a DOT graph as (from label, to label, dashed), read line by line; every line
/// must be one the DOT writer makes (header, graph attribute, node, edge, closing brace).
std::set<std::tuple<std::string, std::string, bool>> dot_edges(const std::string& dot) {
  static const std::regex header(R"(digraph G \{)");
  static const std::regex attribute(R"([a-z]+=[^;\[\]]+;)");
  // Node ids are the node names (as LangGraph writes them), labelled with the same name.
  static const std::regex node(
      R"re(([A-Za-z0-9_]+)\[label="?([A-Za-z0-9_]+)"?(, shape=oval)?\];)re");
  static const std::regex edge(
      R"(([A-Za-z0-9_]+)->([A-Za-z0-9_]+) (\[style=dashed(, label=.*)?\])?;?)");
  std::map<std::string, std::string> labels;
  std::vector<std::tuple<std::string, std::string, bool>> raw;
  std::istringstream in(dot);
  std::string line;
  REQUIRE(std::getline(in, line));
  REQUIRE(std::regex_match(line, header));
  bool closed = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line == "}") {
      closed = true;
    } else if (std::regex_match(line, m, node)) {
      labels[m[1]] = m[2];
    } else if (std::regex_match(line, m, edge)) {
      raw.emplace_back(m[1], m[2], m[3].matched);
    } else {
      INFO(line);
      REQUIRE(std::regex_match(line, attribute));
    }
  }
  CHECK(closed);
  std::set<std::tuple<std::string, std::string, bool>> edges;
  for (const auto& [from, to, dashed] : raw) {
    REQUIRE(labels.count(from) == 1);
    CHECK(labels[from] == from);
    REQUIRE(labels.count(to) == 1);
    edges.emplace(labels[from], labels[to], dashed);
  }
  return edges;
}

bool is_png(const std::string& data) {
  return data.rfind(std::string("\x89PNG\r\n\x1a\n", 8), 0) == 0;
}

/// Width and height from a PNG's IHDR chunk.
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& data) {
  REQUIRE(data.size() > 24);
  REQUIRE(data.substr(12, 4) == "IHDR");
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(data[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

bool one_line_error(const std::string& err) {
  return err.rfind("stategraph: ", 0) == 0 && err.find('\n') == err.size() - 1;
}

}  // namespace

TEST_CASE("stategraph graph: Mermaid of summarize_and_trim is the default") {
  const auto r = graph_cli({"summarize_and_trim"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("%%{init: {'flowchart': {'curve': 'linear'}}}%%\ngraph TD;\n", 0) == 0);
  for (const char* line : {"\t__start__([<p>__start__</p>]):::first\n", "\tchat(chat)\n",
                           "\tsummarize_conversation(summarize_conversation)\n",
                           "\t__end__([<p>__end__</p>]):::last\n", "\t__start__ --> chat;\n",
                           "\tchat -.-> summarize_conversation;\n", "\tchat -.-> __end__;\n",
                           "\tsummarize_conversation --> __end__;\n"}) {
    INFO(line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  const auto explicit_format = graph_cli({"summarize_and_trim", "--format", "mermaid"});
  CHECK(explicit_format.exit_code == 0);
  CHECK(explicit_format.out == r.out);
}

TEST_CASE("stategraph graph: DOT of each built-in graph has its edges, conditional ones dashed") {
  const auto trim = graph_cli({"summarize_and_trim", "--format", "dot"});
  INFO(trim.err);
  REQUIRE(trim.exit_code == 0);
  CHECK(trim.out.find("digraph") != std::string::npos);
  using E = std::tuple<std::string, std::string, bool>;
  CHECK(dot_edges(trim.out) == std::set<E>{{"__start__", "chat", false},
                                           {"chat", "summarize_conversation", true},
                                           {"chat", "__end__", true},
                                           {"summarize_conversation", "__end__", false}});

  const auto echo = graph_cli({"agent", "-f", "dot"});
  REQUIRE(echo.exit_code == 0);
  CHECK(dot_edges(echo.out) ==
        std::set<E>{{"__start__", "echo", false}, {"echo", "__end__", false}});

  const auto react = graph_cli({"react_agent", "--format", "dot"});
  REQUIRE(react.exit_code == 0);
  const auto edges = dot_edges(react.out);
  CHECK(edges.count({"__start__", "agent", false}) == 1);
  CHECK(edges.count({"agent", "tools", true}) == 1);
  CHECK(edges.count({"agent", "__end__", true}) == 1);
  CHECK(edges.count({"tools", "agent", false}) == 1);
}

TEST_CASE("stategraph graph: SVG rendered in-process names every node") {
  const auto r = graph_cli({"summarize_and_trim", "--format", "svg"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("<?xml", 0) == 0);
  CHECK(r.out.find("<svg") != std::string::npos);
  CHECK(r.out.find("</svg>") != std::string::npos);
  for (const char* name : {">__start__<", ">chat<", ">summarize_conversation<", ">__end__<"}) {
    INFO(name);
    CHECK(r.out.find(name) != std::string::npos);
  }
  // The two conditional edges are dashed, the two plain ones not.
  std::size_t dashed = 0;
  for (auto at = r.out.find("stroke-dasharray"); at != std::string::npos;
       at = r.out.find("stroke-dasharray", at + 1))
    ++dashed;
  CHECK(dashed == 2);
  CHECK(r.err.empty());  // Graphviz's warnings do not leak to stderr
}

TEST_CASE("stategraph graph: PNG to a file with -o, the format from --format or the extension") {
  sg::test::TempDir dir;
  const std::string by_extension = dir.sub("trim.png");
  const auto r = graph_cli({"summarize_and_trim", "-o", by_extension});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.empty());
  const std::string png = sg::test::slurp(by_extension);
  CHECK(is_png(png));
  const auto [width, height] = png_size(png);
  CHECK(width > 100);
  CHECK(height > 100);

  const std::string named = dir.sub("picture");
  REQUIRE(graph_cli({"react_agent", "--format", "png", "-o", named}).exit_code == 0);
  CHECK(is_png(sg::test::slurp(named)));

  // -o with an extension of another format: --format wins.
  const std::string svg_named_png = dir.sub("really.png");
  REQUIRE(graph_cli({"agent", "--format", "svg", "-o", svg_named_png}).exit_code == 0);
  CHECK(sg::test::slurp(svg_named_png).rfind("<?xml", 0) == 0);

  // stdout that is not a terminal takes the PNG.
  const auto piped = graph_cli({"agent", "--format", "png"});
  REQUIRE(piped.exit_code == 0);
  CHECK(is_png(piped.out));

  // An unwritable path is a failure (1), on one line.
  const auto bad = graph_cli({"agent", "-o", dir.sub("missing/dir/x.png")});
  CHECK(bad.exit_code == 1);
  CHECK(one_line_error(bad.err));
  CHECK(bad.err.find("cannot write") != std::string::npos);
}

TEST_CASE("stategraph graph: a PNG is not written to a terminal") {
  // script(1) gives the command a pseudo-terminal as stdout; -e passes on its exit code.
  const auto r = sg::test::run_process(
      "/usr/bin/script",
      {"-q", "-e", "-c", std::string(SG_CLI_PATH) + " graph agent --format png", "/dev/null"}, "");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("stdout is a terminal: write it with -o FILE") != std::string::npos);
  CHECK(r.out.find("PNG\r\n") == std::string::npos);
}

TEST_CASE("stategraph graph: every built-in graph in every format") {
  for (const char* name : {"agent", "react_agent", "summarize_and_trim"}) {
    for (const char* format : {"mermaid", "dot", "svg", "png"}) {
      INFO(name << " " << format);
      const auto r = graph_cli({name, "--format", format});
      CHECK(r.exit_code == 0);
      CHECK(r.err.empty());
      CHECK(r.out.size() > 100);
    }
  }
}

TEST_CASE("stategraph graph: --list and --json list the built-in graphs") {
  const auto list = graph_cli({"--list"});
  REQUIRE(list.exit_code == 0);
  std::istringstream lines(list.out);
  std::vector<std::string> names;
  for (std::string line; std::getline(lines, line);) {
    names.push_back(line.substr(0, line.find(' ')));
    CHECK(line.size() > names.back().size() + 10);  // a description follows
  }
  CHECK(names == std::vector<std::string>{"agent", "approval_agent", "interrupt_agent",
                                          "react_agent", "summarize_and_trim"});
  CHECK(graph_cli({}).out == list.out);  // no NAME: the list

  const auto json = graph_cli({"--list", "--json"});
  REQUIRE(json.exit_code == 0);
  const auto parsed = nlohmann::json::parse(json.out);
  REQUIRE(parsed.is_array());
  REQUIRE(parsed.size() == 5);
  CHECK(parsed[0]["name"] == "agent");
  CHECK(parsed[0]["nodes"] == nlohmann::json{"echo"});
  CHECK(parsed[1]["name"] == "approval_agent");
  CHECK(parsed[1]["nodes"] ==
        nlohmann::json{"HumanInTheLoopMiddleware.after_model", "model", "tools"});
  CHECK(parsed[2]["name"] == "interrupt_agent");
  CHECK(parsed[2]["nodes"] == nlohmann::json{"ask"});
  CHECK(parsed[3]["name"] == "react_agent");
  CHECK(parsed[3]["nodes"] == nlohmann::json{"agent", "tools"});
  CHECK(parsed[4]["name"] == "summarize_and_trim");
  CHECK(parsed[4]["nodes"] == nlohmann::json{"chat", "summarize_conversation"});
  for (const auto& g : parsed) CHECK(!g["description"].get<std::string>().empty());
}

TEST_CASE("stategraph graph: usage errors are one line and exit code 2") {
  const auto unknown = graph_cli({"nope"});
  CHECK(unknown.exit_code == 2);
  CHECK(one_line_error(unknown.err));
  CHECK(unknown.err.find("unknown graph 'nope' (built-in graphs: agent, approval_agent, "
                         "interrupt_agent, react_agent, summarize_and_trim)") != std::string::npos);
  CHECK(unknown.out.empty());

  const auto format = graph_cli({"agent", "--format", "jpeg"});
  CHECK(format.exit_code == 2);
  CHECK(one_line_error(format.err));
  CHECK(format.err.find("jpeg") != std::string::npos);

  for (const auto& args : std::vector<std::vector<std::string>>{
           {"agent", "--list"}, {"agent", "--json"}, {"--format", "svg"}, {"-o", "x.svg"}}) {
    const auto r = graph_cli(args);
    INFO(args.front() << " " << args.back() << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(one_line_error(r.err));
  }
}

TEST_CASE("stategraph graph --help explains the formats") {
  const auto r = graph_cli({"--help"});
  REQUIRE(r.exit_code == 0);
  for (const char* text : {"Formats:", "mermaid", "dot", "svg", "png", "-o", "--list"}) {
    INFO(text);
    CHECK(r.out.find(text) != std::string::npos);
  }
}
