// inproc::salvage: what can be read of a damaged data file, copied into a new one. It reads a
// copy, never the file itself, so a salvage that fails half-way leaves the damaged file as it
// was for another attempt (or another tool).
#include <filesystem>
#include <set>
#include <system_error>

#include <acemq/inproc.hpp>
#include "inproc/data_file.hpp"
#include "inproc/quoted.hpp"
#include "inproc/row_checksum.hpp"

namespace acemq::inproc {

namespace {

// The copy of the damaged file (and its WAL, which holds the last commits) that salvage reads,
// removed when salvage returns.
class ScratchCopy {
public:
    ScratchCopy(const std::filesystem::path& from, const std::filesystem::path& to)
        : path_(to.string() + ".salvage-source") {
        remove();
        std::filesystem::copy_file(from, path_);
        const std::filesystem::path wal = from.string() + "-wal";
        if (std::filesystem::exists(wal)) std::filesystem::copy_file(wal, path_.string() + "-wal");
    }
    ~ScratchCopy() { remove(); }
    ScratchCopy(const ScratchCopy&) = delete;
    ScratchCopy& operator=(const ScratchCopy&) = delete;

    std::string path() const { return path_.string(); }

private:
    void remove() noexcept {
        std::error_code ignored;  // a copy that is not there is what is wanted
        std::filesystem::remove(path_, ignored);
        std::filesystem::remove(path_.string() + "-wal", ignored);
    }

    std::filesystem::path path_;
};

}  // namespace

SalvageReport salvage(const std::string& from, const std::string& to) {
    if (!std::filesystem::exists(from))
        throw DataFileError("acemq: cannot salvage " + detail::in_quotes(from) + ": there is no such file");
    if (std::filesystem::exists(to))
        throw DataFileError("acemq: cannot salvage into " + detail::in_quotes(to) +
                            ": it exists; salvage writes a new file, so name one that does not");
    SalvageReport report;
    detail::DataFileContents contents;
    {
        ScratchCopy copy(from, to);
        try {
            detail::DataFile source(copy.path(), "", 0, true);
            contents = source.read_readable(report.lost);
        } catch (const Error& error) {
            throw DataFileError("acemq: nothing of " + detail::in_quotes(from) + " can be read: " + error.what());
        }
    }
    // A salvage that fails half-way leaves no NEWFILE behind, so it can be run again.
    try {
        detail::DataFile target(to, "", 0);
        target.make_writable();
        std::set<std::uint64_t> queues;
        target.begin();
        for (const ExchangeDeclaration& exchange : contents.exchanges) target.put_exchange(exchange);
        for (const detail::StoredQueue& queue : contents.queues) {
            target.put_queue(queue.id, queue.declaration);
            queues.insert(queue.id);
        }
        for (const detail::StoredBinding& binding : contents.bindings)
            if (queues.contains(binding.queue)) target.put_binding(binding);
        for (const auto& [queue, first_offset] : contents.stream_starts)
            if (queues.contains(queue)) target.set_stream_start(queue, first_offset);
        for (const detail::StoredRow& row : contents.messages) {
            if (!queues.contains(row.queue)) {
                report.lost.push_back("message " + std::to_string(row.id) + ": its queue's declaration was not saved");
                continue;
            }
            const std::vector<std::byte> properties = detail::pack_properties(row.message);
            target.insert_message(
                row.id, row.queue, row.enqueued_ms, row.message.redelivered(), properties, row.message.body(),
                detail::message_checksum(static_cast<std::int64_t>(row.id), static_cast<std::int64_t>(row.queue),
                                         row.enqueued_ms, properties, row.message.body()));
            ++report.messages;
        }
        target.commit();
        target.checkpoint();
    } catch (...) {
        std::error_code ignored;  // a file that was never made is what is wanted
        std::filesystem::remove(to, ignored);
        std::filesystem::remove(to + "-wal", ignored);
        throw;
    }
    report.exchanges = contents.exchanges.size();
    report.queues = contents.queues.size();
    report.bindings = contents.bindings.size();
    return report;
}

}  // namespace acemq::inproc
