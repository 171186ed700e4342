// Suite `reliability`: a seeded, time-bounded fuzz loop over the AMQP transport's field-table
// reader and writer (transports/amqp/wire.hpp), no broker needed. Three kinds of input:
// tables built in C++ (random kinds, names up to 300 bytes, nesting up to 70), their
// encodings mutated byte by byte and decoded by rabbitmq-c's own amqp_decode_table, and
// encodings nested far past the limit. The properties are in wire_properties.hpp.
//
// ACEMQ_FUZZ_SEED fixes the seed (printed at the start; each input has its own generator,
// seeded from the seed and its number, so a failure names what reproduces it) and
// ACEMQ_FUZZ_SECONDS the time spent (3 by default).
#include <catch2/catch.hpp>

#include "wire_properties.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {

using acemq::FieldArray;
using acemq::FieldTable;
using acemq::FieldValue;

std::uint64_t seed() {
    const char* given = std::getenv("ACEMQ_FUZZ_SEED");
    if (given != nullptr && *given != '\0') return std::stoull(given);
    return std::random_device{}();
}

std::chrono::milliseconds budget() {
    const char* given = std::getenv("ACEMQ_FUZZ_SECONDS");
    return std::chrono::milliseconds(given != nullptr && *given != '\0' ? std::stoll(given) * 1000 : 3000);
}

class Inputs {
public:
    explicit Inputs(std::uint64_t seed) : random_(seed) {}

    std::size_t below(std::size_t bound) { return std::uniform_int_distribution<std::size_t>(0, bound - 1)(random_); }
    bool one_in(std::size_t n) { return below(n) == 0; }

    // `level`: that of the table being filled. Nesting past the limit comes in now and then.
    FieldTable table(int level, int deepest) {
        FieldTable out;
        const std::size_t entries = below(level == 1 ? 6 : 3) + (level < deepest ? 1 : 0);
        for (std::size_t i = 0; i < entries; ++i) out.insert_or_assign(name(), value(level, deepest, i == 0));
        return out;
    }

private:
    std::string name() {
        const std::size_t size = one_in(60) ? 250 + below(50) : below(12);
        std::string out(size, 'k');
        for (char& c : out) c = static_cast<char>('a' + below(26));
        return out;
    }

    // The first entry of each table carries the nesting on, so `deepest` is reached.
    FieldValue value(int level, int deepest, bool carries) {
        if (carries && level < deepest) {
            if (one_in(2)) return table(level + 1, deepest);
            FieldArray items;
            items.push_back(value(level + 1, deepest, true));
            for (std::size_t i = below(3); i > 0; --i) items.push_back(value(level + 1, level + 1, false));
            return items;
        }
        switch (below(8)) {
        case 0: return FieldValue();
        case 1: return FieldValue(one_in(2));
        case 2: return FieldValue(static_cast<std::int32_t>(random_()));
        case 3: return FieldValue(static_cast<std::int64_t>(random_()));
        case 4: return FieldValue(static_cast<double>(static_cast<std::int32_t>(random_())) / 7.0);
        case 5: {
            std::string text(below(40), ' ');
            for (char& c : text) c = static_cast<char>(below(256));
            return FieldValue(std::move(text));
        }
        case 6: {
            acemq::Bytes data(below(40));
            for (std::byte& b : data) b = static_cast<std::byte>(below(256));
            return FieldValue(std::move(data));
        }
        default: return FieldValue(FieldArray{FieldValue(static_cast<std::int32_t>(below(100)))});
        }
    }

public:
    // A byte string changed in a few random places: flipped, set to a nesting kind letter,
    // a range copied over another (which nests what was flat), or cut short.
    void mutate(std::vector<std::uint8_t>& bytes) {
        static constexpr std::uint8_t letters[] = {'F', 'A', 'V', 'S', 'x', 'I', 'l', 'd', 't', 'b'};
        for (std::size_t changes = 1 + below(4); changes > 0 && !bytes.empty(); --changes) {
            const std::size_t at = below(bytes.size());
            switch (below(4)) {
            case 0: bytes[at] ^= static_cast<std::uint8_t>(1u << below(8)); break;
            case 1: bytes[at] = letters[below(sizeof letters)]; break;
            case 2: {
                const std::size_t from = below(bytes.size());
                const std::size_t length = std::min(below(32), bytes.size() - std::max(at, from));
                std::copy(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                          bytes.begin() + static_cast<std::ptrdiff_t>(from + length),
                          bytes.begin() + static_cast<std::ptrdiff_t>(at));
                break;
            }
            default: bytes.resize(at); break;
            }
        }
    }

private:
    std::mt19937_64 random_;
};

void put32(std::vector<std::uint8_t>& out, std::size_t at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i)
        out[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (24 - 8 * i));
}

// The encoding of a table nested `depth` levels deep (the outer table is level 1), every
// even level an array when `mixed`; built from the inside out, without recursion.
std::vector<std::uint8_t> nested_encoding(int depth, bool mixed) {
    auto kind = [&](int level) -> std::uint8_t { return mixed && level % 2 == 0 ? 'A' : 'F'; };
    std::vector<std::uint8_t> inner(4, 0);  // the innermost table or array: empty
    for (int level = depth - 1; level >= 1; --level) {
        std::vector<std::uint8_t> out(4, 0);
        if (kind(level) == 'F') {
            out.push_back(1);
            out.push_back('a');
        }
        out.push_back(kind(level + 1));
        out.insert(out.end(), inner.begin(), inner.end());
        put32(out, 0, static_cast<std::uint32_t>(out.size() - 4));
        inner = std::move(out);
    }
    return inner;
}

}  // namespace

TEST_CASE("AMQP wire fuzz: random, mutated and deeply nested field tables never crash the reader or pass the limit") {
    const std::uint64_t base = seed();
    std::cout << "fuzz seed: " << base << " (set ACEMQ_FUZZ_SEED=" << base << " to repeat)" << std::endl;
    const auto deadline = std::chrono::steady_clock::now() + budget();
    std::uint64_t inputs = 0;
    std::uint64_t refused_deep = 0;
    for (std::uint64_t n = 0; std::chrono::steady_clock::now() < deadline; ++n) {
        Inputs make(base ^ (n * 0x9E3779B97F4A7C15ull));
        INFO("seed " << base << ", input " << n);
        const int deepest =
            make.one_in(10) ? 60 + static_cast<int>(make.below(11)) : 1 + static_cast<int>(make.below(6));
        const FieldTable table = make.table(1, deepest);
        const std::string built = wire_properties::check_table(table);
        INFO("built table");
        REQUIRE(built.empty());

        const wire_properties::Shape shape = wire_properties::shape_of(table);
        if (shape.depth <= acemq::amqp::max_table_depth && shape.longest_name <= 255) {
            std::string failure;
            std::vector<std::uint8_t> bytes = wire_properties::encode(table, failure);
            REQUIRE(failure.empty());
            for (int round = 0; round < 8; ++round) {
                make.mutate(bytes);
                const std::string mutated = wire_properties::check_encoded(bytes.data(), bytes.size());
                INFO("mutation round " << round);
                REQUIRE(mutated.empty());
                ++inputs;
            }
        }

        const int depth = 60 + static_cast<int>(make.below(make.one_in(20) ? 3000 : 20));
        const std::vector<std::uint8_t> nested = nested_encoding(depth, make.one_in(2));
        acemq::FieldTable read;
        const std::string deep = wire_properties::check_encoded(nested.data(), nested.size(), &read);
        INFO("nested " << depth << " deep");
        REQUIRE(deep.empty());
        if (depth > acemq::amqp::max_table_depth) ++refused_deep;
        inputs += 2;
    }
    std::cout << "fuzz: " << inputs << " inputs, " << refused_deep << " nested past the limit" << std::endl;
    CHECK(inputs > 0);
}

TEST_CASE("AMQP wire: the reader reads exactly max_table_depth levels and refuses one more") {
    for (const bool mixed : {false, true}) {
        INFO((mixed ? "tables and arrays" : "tables"));
        const std::vector<std::uint8_t> limit = nested_encoding(acemq::amqp::max_table_depth, mixed);
        const std::vector<std::uint8_t> over = nested_encoding(acemq::amqp::max_table_depth + 1, mixed);
        amqp_pool_t pool;
        init_amqp_pool(&pool, 4096);
        amqp_table_t at_limit{}, past_limit{};
        std::size_t offset = 0;
        REQUIRE(amqp_decode_table(amqp_bytes_t{limit.size(), const_cast<std::uint8_t*>(limit.data())}, &pool, &at_limit,
                                  &offset) == AMQP_STATUS_OK);
        offset = 0;
        REQUIRE(amqp_decode_table(amqp_bytes_t{over.size(), const_cast<std::uint8_t*>(over.data())}, &pool, &past_limit,
                                  &offset) == AMQP_STATUS_OK);
        CHECK(wire_properties::depth_of(at_limit) == acemq::amqp::max_table_depth);
        CHECK(wire_properties::depth_of(past_limit) == acemq::amqp::max_table_depth + 1);
        CHECK(wire_properties::shape_of(acemq::amqp::table_of(at_limit)).depth == acemq::amqp::max_table_depth);
        CHECK_THROWS_WITH(acemq::amqp::table_of(past_limit),
                          Catch::Contains("more than 64 levels deep, the most this transport reads or writes"));
        empty_amqp_pool(&pool);
    }
}
