#pragma once
// Test helper: JSON (as stored in the golden files) to interpreter values, the way Python's
// json.load + jinja2 would see them (objects keep key order; integers stay integers).
#include "chat/jinja_value.h"

#include <nlohmann/json.hpp>

namespace coli::test {

inline jinja::Value jsonToValue(const nlohmann::ordered_json& j) {
    using jinja::Value;
    switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
        return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
        return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
        return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float:
        return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
        return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
        jinja::ValueList l;
        for (const auto& x : j)
            l.push_back(jsonToValue(x));
        return Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
        jinja::ValueDict d;
        for (auto it = j.begin(); it != j.end(); ++it)
            d.set(it.key(), jsonToValue(it.value()));
        return Value::dict(std::move(d));
    }
    default:
        return Value();
    }
}

} // namespace coli::test
