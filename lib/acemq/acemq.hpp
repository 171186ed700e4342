// The whole public API of acemq-cpp in one include.
#pragma once

#include "acemq/ack.hpp"
#include "acemq/codec.hpp"
#include "acemq/envelope.hpp"
#include "acemq/error.hpp"
#include "acemq/field.hpp"
#include "acemq/json_codec.hpp"
#include "acemq/msgpack_codec.hpp"
#include "acemq/naming.hpp"
#include "acemq/reflect.hpp"
#include "acemq/retry.hpp"
#include "acemq/topology.hpp"
#include "acemq/uuid.hpp"
#include "acemq/value.hpp"
