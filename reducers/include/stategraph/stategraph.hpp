// SPDX-License-Identifier: MIT
#pragma once

// Umbrella header: messages, typed state, graphs and the reducers.
#include <stategraph/core/cache.hpp>
#include <stategraph/core/context.hpp>
#include <stategraph/core/error.hpp>
#include <stategraph/core/graph_types.hpp>
#include <stategraph/core/json.hpp>
#include <stategraph/core/list_update.hpp>
#include <stategraph/core/managed.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/reducer.hpp>
#include <stategraph/core/schema.hpp>
#include <stategraph/core/state_graph.hpp>
#include <stategraph/core/thread_pool.hpp>
#include <stategraph/core/update.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/reducers/add_messages.hpp>
#include <stategraph/reducers/message_utils.hpp>
#include <stategraph/reducers/messages_state.hpp>
