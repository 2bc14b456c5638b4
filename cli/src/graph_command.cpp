// SPDX-License-Identifier: MIT
// `stategraph graph NAME`: draws a built-in graph as Mermaid, Graphviz DOT, or a picture (SVG,
// PNG) that Graphviz's C library renders in this process; `stategraph graph --list` lists them.
#include <stategraph/core/error.hpp>
#include <stategraph/server/graph_picture.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "builtin_graphs.hpp"
#include "cli.hpp"

namespace sg::cli {
namespace {

constexpr std::array<std::string_view, 4> kFormats{"mermaid", "dot", "svg", "png"};

struct GraphArgs {
  std::string name;
  std::string format = "mermaid";
  std::string output;  // empty: stdout
  bool list = false;
  bool json = false;
};

/// The format a file name's extension names, or "" for another extension.
std::string format_of_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".mmd" || ext == ".mermaid") return "mermaid";
  if (ext == ".dot" || ext == ".gv") return "dot";
  if (ext == ".svg") return "svg";
  if (ext == ".png") return "png";
  return "";
}

/// The drawing of `name` in `format`.
std::string draw(const std::string& name, const std::string& format) {
  const BuiltinGraph* entry = find_builtin_graph(name);
  if (!entry) throw Error(errc::kInvalidArgument, "unknown graph '" + name + "'");
  // The topology does not depend on the model: draw on the offline one, silently.
  const AnyCompiledGraph graph = entry->build(BuiltinGraphOptions{});
  if (format == "mermaid") return graph_mermaid(graph);
  if (format == "dot") return graph_dot(graph);
  return server::render_graph_picture(graph_dot(graph), format);
}

void write_output(const std::string& data, const std::string& path) {
  if (path.empty() || path == "-") {
    std::cout.write(data.data(), static_cast<std::streamsize>(data.size()));
    std::cout.flush();
    if (!std::cout) throw Error(errc::kInvalidArgument, "cannot write to stdout");
    return;
  }
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) {
    throw Error(errc::kInvalidArgument,
                fmt::format("cannot write '{}'{}", path,
                            errno ? ": " + std::string(std::strerror(errno)) : std::string()));
  }
}

void list_graphs(bool as_json) {
  if (as_json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& g : builtin_graphs()) {
      out.push_back({{"name", g.name},
                     {"description", g.description},
                     {"nodes", graph_nodes(g.build(BuiltinGraphOptions{}))}});
    }
    write_json(out, -1);
    return;
  }
  std::size_t width = 0;
  for (const auto& g : builtin_graphs()) width = std::max(width, g.name.size());
  for (const auto& g : builtin_graphs()) {
    std::cout << fmt::format("{:<{}}  {}\n", g.name, width, g.description);
  }
}

/// Usage errors that CLI11's own checks cannot express (exit code 2, as a ParseError).
void check_usage(GraphArgs& args, bool format_given) {
  if (args.list && !args.name.empty())
    throw CLI::ValidationError("give a graph NAME or --list, not both");
  if (args.name.empty()) {
    if (format_given || !args.output.empty())
      throw CLI::ValidationError("--format and -o draw a graph: give its NAME");
    return;
  }
  if (args.json) throw CLI::ValidationError("--json goes with --list");
  if (!find_builtin_graph(args.name)) {
    throw CLI::ValidationError(
        fmt::format("unknown graph '{}' (built-in graphs: {})", args.name, builtin_graph_names()));
  }
  if (!format_given && !args.output.empty()) {
    if (std::string f = format_of_extension(args.output); !f.empty()) args.format = f;
  }
  const bool to_stdout = args.output.empty() || args.output == "-";
  if (args.format == "png" && to_stdout && isatty(STDOUT_FILENO) == 1) {
    throw CLI::ValidationError("a PNG is binary and stdout is a terminal: write it with -o FILE");
  }
}

}  // namespace

void add_graph_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<GraphArgs>();
  auto* graph = app.add_subcommand(
      "graph", "Draws a built-in graph (Mermaid, Graphviz DOT, SVG or PNG); --list lists them");
  graph->add_option("NAME", args->name,
                    "The graph to draw (" + builtin_graph_names() + "); none: list them");
  auto* format =
      graph->add_option("-f,--format", args->format, "mermaid, dot, svg or png (see below)")
          ->check(CLI::IsMember(std::vector<std::string>(kFormats.begin(), kFormats.end())))
          ->capture_default_str();
  graph
      ->add_option("-o,--output", args->output,
                   "Write to FILE instead of stdout; without --format, its extension (.mmd, "
                   ".dot, .gv, .svg, .png) picks the format")
      ->type_name("FILE");
  graph->add_flag("--list", args->list, "List the built-in graphs with a line about each");
  graph->add_flag("--json", args->json, "With --list: a JSON array of name, description, nodes");
  graph->footer(
      "Formats:\n"
      "  mermaid  a Mermaid flowchart, as LangGraph's draw_mermaid writes it (paste it into a\n"
      "           ```mermaid block of Markdown or into mermaid.live)\n"
      "  dot      Graphviz DOT (draw_dot): for `dot -Tpdf` and other Graphviz tools\n"
      "  svg      a picture laid out and rendered by Graphviz in this process, in LangGraph's\n"
      "           style: __start__ and __end__ as ovals, conditional edges dashed\n"
      "  png      the same picture as a PNG (144 dpi); never written to a terminal: use -o\n"
      "Examples:\n"
      "  stategraph graph --list\n"
      "  stategraph graph summarize_and_trim\n"
      "  stategraph graph react_agent -o react_agent.svg");
  graph->callback([&action, args, format] {
    check_usage(*args, format->count() > 0);
    const GraphArgs chosen = *args;
    action = [chosen] {
      if (chosen.name.empty()) {
        list_graphs(chosen.json);
        return;
      }
      write_output(draw(chosen.name, chosen.format), chosen.output);
    };
  });
}

}  // namespace sg::cli
