#pragma once

// Umbrella header: the message model and the reducers.
#include <stategraph/core/error.hpp>
#include <stategraph/core/message.hpp>
#include <stategraph/core/uuid.hpp>
#include <stategraph/reducers/add_messages.hpp>
#include <stategraph/reducers/json.hpp>
#include <stategraph/reducers/list_update.hpp>
#include <stategraph/reducers/message_utils.hpp>
#include <stategraph/reducers/reducer.hpp>
