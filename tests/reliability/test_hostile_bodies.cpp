// Bodies built to exhaust a decoder (issue 9, item 3): each is refused with a DecodeError
// before the decoder allocates more than the body could honestly need, and a body no codec
// claims says so. The memory bound is checked in a child process under RLIMIT_AS, where an
// allocation past the limit is a std::bad_alloc and, escaping, an abnormal exit.
#include <catch2/catch.hpp>

#include <acemq/codec.hpp>
#include <acemq/error.hpp>
#include <acemq/json_codec.hpp>
#include <acemq/msgpack_codec.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../support/codec_bodies.hpp"

namespace {

using Bytes = acemq::Value::Bytes;
using acemq::Value;

struct Payment {
    std::string payment_id;
    std::int64_t amount_cents = 0;
};

struct Batch {
    std::vector<std::optional<std::int32_t>> readings;
};

void append(Bytes& body, std::initializer_list<int> bytes) {
    for (int b : bytes) body.push_back(static_cast<std::byte>(b));
}

void append_be32(Bytes& body, int tag, std::uint32_t n) {
    append(body, {tag, int(n >> 24), int((n >> 16) & 0xff), int((n >> 8) & 0xff), int(n & 0xff)});
}

// An array32 of `count` nils: 5 bytes of header and one byte per element.
Bytes msgpack_nils(std::uint32_t count) {
    Bytes body;
    body.reserve(count + 5);
    append_be32(body, 0xdd, count);
    body.insert(body.end(), count, std::byte{0xc0});
    return body;
}

using testing_support::bytes_of;
using testing_support::decode_error_of;

constexpr bool sanitized =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;  // the sanitizers reserve terabytes of address space: RLIMIT_AS cannot apply
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

// Runs `work` in a child limited to `limit` bytes of address space. The child exits 0
// when `work` threw a DecodeError, 1 when it returned, 2 on any other exception (a
// bad_alloc past the limit among them); the result is that code, or 128 + the signal.
int exit_code_under_memory_limit(rlim_t limit, const std::function<void()>& work) {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const rlimit cap{limit, limit};
        if (setrlimit(RLIMIT_AS, &cap) != 0) _exit(3);
        int code = 1;
        try {
            work();
        } catch (const acemq::DecodeError&) {
            code = 0;
        } catch (...) {  // the outcome under test: any other exception is reported as 2
            code = 2;
        }
        _exit(code);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

constexpr rlim_t memory_limit = 512u << 20;

}  // namespace

TEST_CASE("a 20 MB msgpack array of nils is refused without building its tree") {
    const Bytes body = msgpack_nils(20u << 20);
    const acemq::MsgpackCodec codec;

    const auto message =
        decode_error_of([&] { (void)acemq::decode<Payment>(codec, body, acemq::content_types::msgpack); });
    CHECK_THAT(message, Catch::StartsWith("acemq: cannot decode a Payment from application/msgpack: ") &&
                            Catch::Contains("more than 1000000 values"));
    CHECK_THROWS_AS(acemq::decode<Batch>(codec, body, acemq::content_types::msgpack), acemq::DecodeError);
    CHECK_THROWS_AS(acemq::default_codec()->decode(body, acemq::content_types::msgpack), acemq::DecodeError);

    if (sanitized) return;
    CHECK(exit_code_under_memory_limit(
              memory_limit, [&] { (void)acemq::decode<Payment>(codec, body, acemq::content_types::msgpack); }) == 0);
}

TEST_CASE("nested msgpack arrays that each claim the whole body allocate only what is read") {
    // 64 nested array32 headers, each declaring as many elements as the body has bytes,
    // then padding: a reader that reserves what a header declares reserves 64 times the
    // body before it finds the body truncated.
    const std::uint32_t size = 4u << 20;
    Bytes body;
    body.reserve(size);
    for (int level = 0; level < 64; ++level) append_be32(body, 0xdd, size);
    body.resize(size, std::byte{0xc0});
    // The default limit would refuse the first header outright; what is tested here is
    // the reading itself, so the limit is set past anything the body could hold.
    const acemq::MsgpackCodec codec(std::size_t{1} << 40);
    CHECK_THROWS_AS(codec.decode(body, ""), acemq::DecodeError);
    if (sanitized) return;
    CHECK(exit_code_under_memory_limit(memory_limit, [&] { (void)codec.decode(body, ""); }) == 0);
}

TEST_CASE("a JSON body of millions of values is refused with a DecodeError") {
    std::string text = "[";
    text.reserve(4u << 20);
    while (text.size() < (4u << 20)) text += "0,";
    text += "0]";
    const Bytes body = bytes_of(text);
    const acemq::JsonCodec codec;
    CHECK_THAT(decode_error_of([&] { (void)acemq::decode<Payment>(codec, body, ""); }),
               Catch::StartsWith("acemq: cannot decode a Payment from an untyped message: ") &&
                   Catch::Contains("more than 1000000 values"));
    if (sanitized) return;
    CHECK(exit_code_under_memory_limit(256u << 20, [&] { (void)codec.decode(body, ""); }) == 0);
}

TEST_CASE("the value limit is the codec's to set, and counts every value") {
    const acemq::MsgpackCodec small_msgpack(10);
    const acemq::JsonCodec small_json(10);
    // Nine numbers and their array: ten values, the limit.
    CHECK_NOTHROW(small_msgpack.decode(small_msgpack.encode(Value(Value::Array(9, Value(1)))), ""));
    CHECK_NOTHROW(small_json.decode(bytes_of("[1,2,3,4,5,6,7,8,9]"), ""));
    CHECK_THAT(decode_error_of([&] { (void)small_msgpack.decode(msgpack_nils(10), ""); }),
               Catch::Contains("more than 10 values"));
    CHECK_THAT(decode_error_of([&] { (void)small_json.decode(bytes_of("[1,2,3,4,5,6,7,8,9,10]"), ""); }),
               Catch::Contains("more than 10 values"));
    CHECK_THAT(decode_error_of([&] { (void)small_json.decode(bytes_of(R"({"a":[1,2,3,4],"b":[5,6,7,8]})"), ""); }),
               Catch::Contains("more than 10 values"));
    CHECK_THROWS_AS(acemq::MsgpackCodec(0), acemq::InvalidArgument);
    CHECK_THROWS_AS(acemq::JsonCodec(0), acemq::InvalidArgument);
}

TEST_CASE("a content type no codec claims is named, with the codecs that were asked") {
    const Bytes body = bytes_of("\x92\xa1p\x01");
    SECTION("no codec claims it: the family's sentence lists each") {
        const acemq::CompositeCodec codec(
            {std::make_shared<acemq::MsgpackCodec>(), std::make_shared<acemq::JsonCodec>()});
        CHECK(decode_error_of([&] { (void)acemq::decode<Payment>(codec, body, "application/x-protobuf"); }) ==
              "acemq: cannot decode a Payment from application/x-protobuf: no codec could read this "
              "message. Tried MsgpackCodec: does not read application/x-protobuf; JsonCodec: does not read "
              "application/x-protobuf");
    }
    SECTION("only the bytes codec claims it, and a struct is wanted") {
        const auto message = decode_error_of(
            [&] { (void)acemq::decode<Payment>(*acemq::default_codec(), body, "application/x-protobuf"); });
        CHECK(message ==
              "acemq: cannot decode a Payment from application/x-protobuf: no codec reads "
              "application/x-protobuf but as raw bytes, which a Payment cannot be made from (the codecs known "
              "are JsonCodec, MsgpackCodec, TextCodec, BytesCodec); consume it as acemq::Bytes, publish it "
              "with a content type one of them reads, or add a codec for it");
        CHECK_THAT(message, !Catch::Contains("expected a record"));
        // Raw bytes are still what a bytes consumer gets.
        CHECK(acemq::decode<Bytes>(*acemq::default_codec(), body, "application/x-protobuf") == body);
    }
    SECTION("a bin body under a content type a codec claims keeps its own reason") {
        const Bytes bin = {std::byte{0xc4}, std::byte{0x01}, std::byte{0x00}};
        CHECK_THAT(
            decode_error_of([&] { (void)acemq::decode<Payment>(*acemq::default_codec(), bin, "application/msgpack"); }),
            Catch::Contains("found bytes") && !Catch::Contains("no codec reads"));
    }
}
