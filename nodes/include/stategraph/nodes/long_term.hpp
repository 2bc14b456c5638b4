// SPDX-License-Identifier: MIT
#pragma once
// Long-term memory on the store, all in one include: memory tools for the hot path
// (memory_tools.hpp), the debounced background writer (memory_writer.hpp), a profile updated by
// JSON Patch and validated by a JSON schema (profile.hpp, json_schema.hpp), a collection of
// memories managed by a model (memory_collection.hpp), and memories in the prompt: the agent's
// own instructions and few-shot examples (prompt_memory.hpp). examples/memory_concepts shows
// them together.

#include <stategraph/nodes/json_schema.hpp>
#include <stategraph/nodes/memory_collection.hpp>
#include <stategraph/nodes/memory_tools.hpp>
#include <stategraph/nodes/memory_writer.hpp>
#include <stategraph/nodes/namespace_template.hpp>
#include <stategraph/nodes/profile.hpp>
#include <stategraph/nodes/prompt_memory.hpp>
