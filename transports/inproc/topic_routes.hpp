// Topic-exchange matching as RabbitMQ does it, on a trie of binding-pattern words built at
// bind time, so a publish walks the words of its key once instead of testing every binding.
//
// Keys and patterns are words separated by '.': "" has no words, "a..b" has three (the
// middle one empty). In a pattern `*` stands for exactly one word and `#` for zero or more,
// so `orders.#` matches `orders` and `#` matches every key, the empty one included.
//
// Internal to the inproc broker. Not thread-safe: the broker's lock guards it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

namespace acemq::inproc::detail {

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};

// A map keyed by std::string that finds by std::string_view without building a string.
template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

using Words = boost::container::small_vector<std::string_view, 16>;

inline Words split_words(std::string_view key) {
    Words words;
    if (key.empty()) return words;
    for (;;) {
        const std::size_t dot = key.find('.');
        words.push_back(key.substr(0, dot));
        if (dot == std::string_view::npos) return words;
        key.remove_prefix(dot + 1);
    }
}

template <class Target>
class TopicRoutes {
public:
    void add(std::string_view pattern, Target target) {
        Node* node = &root_;
        for (std::string_view word : split_words(pattern)) {
            std::unique_ptr<Node>* next;
            if (word == "*")
                next = &node->any_one;
            else if (word == "#")
                next = &node->any_run;
            else
                next = &node->words[std::string(word)];
            if (!*next) *next = std::make_unique<Node>();
            node = next->get();
        }
        node->targets.push_back(std::move(target));
    }

    void clear() { root_ = Node{}; }

    // Calls `visit` with the target of every binding whose pattern matches `key`; a target
    // bound by several matching patterns is visited once per pattern.
    template <class Visit>
    void match(std::string_view key, Visit&& visit) const {
        const Words words = split_words(key);
        walk(root_, words, 0, visit);
    }

private:
    struct Node {
        StringMap<std::unique_ptr<Node>> words;
        std::unique_ptr<Node> any_one;  // `*`
        std::unique_ptr<Node> any_run;  // `#`
        std::vector<Target> targets;    // bindings whose pattern ends here
    };

    template <class Visit>
    static void walk(const Node& node, std::span<const std::string_view> words, std::size_t at, Visit& visit) {
        if (node.any_run)  // `#` takes none, one, ... or all of the words left
            for (std::size_t next = at; next <= words.size(); ++next) walk(*node.any_run, words, next, visit);
        if (at == words.size()) {
            for (const Target& target : node.targets) visit(target);
            return;
        }
        if (auto found = node.words.find(words[at]); found != node.words.end())
            walk(*found->second, words, at + 1, visit);
        if (node.any_one) walk(*node.any_one, words, at + 1, visit);
    }

    Node root_;
};

}  // namespace acemq::inproc::detail
