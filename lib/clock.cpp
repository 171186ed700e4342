#include <acemq/clock.hpp>

namespace acemq {

namespace {

class SystemClock final : public Clock {
public:
    ~SystemClock() override {
        {
            std::lock_guard guard(lock_);
            stopping_ = true;
        }
        changed_.notify_all();
        if (timer_thread_.joinable()) timer_thread_.join();
    }

    time_point now() const override { return std::chrono::steady_clock::now(); }

    bool wait_until(time_point deadline, std::stop_token stop) override {
        std::mutex wait_lock;
        std::condition_variable_any woken;
        std::unique_lock hold(wait_lock);
        woken.wait_until(hold, stop, deadline, [] { return false; });
        return now() >= deadline;
    }

    TimerId call_at(time_point deadline, std::function<void()> action) override {
        std::lock_guard guard(lock_);
        if (!timer_thread_.joinable()) timer_thread_ = std::thread([this] { run_timers(); });
        const TimerId id = next_id_++;
        timers_.emplace(deadline, std::make_pair(id, std::move(action)));
        changed_.notify_all();
        return id;
    }

    void cancel(TimerId timer) override {
        std::unique_lock guard(lock_);
        for (auto it = timers_.begin(); it != timers_.end(); ++it) {
            if (it->second.first == timer) {
                timers_.erase(it);
                return;
            }
        }
        // Already taken by the timer thread: wait until its action is over, unless this
        // call comes from that action itself.
        if (firing_ == timer && std::this_thread::get_id() != timer_thread_.get_id())
            changed_.wait(guard, [&] { return firing_ != timer; });
    }

private:
    void run_timers() {
        std::unique_lock guard(lock_);
        while (!stopping_) {
            if (timers_.empty()) {
                changed_.wait(guard);
                continue;
            }
            auto earliest = timers_.begin();
            // A copy: the wait lets go of the lock, and cancel() may erase the entry meanwhile.
            const time_point due = earliest->first;
            if (due > now()) {
                changed_.wait_until(guard, due);
                continue;
            }
            auto [id, action] = std::move(earliest->second);
            timers_.erase(earliest);
            firing_ = id;
            guard.unlock();
            action();
            guard.lock();
            firing_ = 0;
            changed_.notify_all();
        }
    }

    std::mutex lock_;
    std::condition_variable changed_;
    std::multimap<time_point, std::pair<TimerId, std::function<void()>>> timers_;
    TimerId next_id_ = 1;
    TimerId firing_ = 0;
    bool stopping_ = false;
    std::thread timer_thread_;
};

}  // namespace

std::shared_ptr<Clock> system_clock() {
    static const std::shared_ptr<Clock> shared = std::make_shared<SystemClock>();
    return shared;
}

ManualClock::ManualClock(time_point start) : now_(start) {}

Clock::time_point ManualClock::now() const {
    std::lock_guard guard(lock_);
    return now_;
}

bool ManualClock::wait_until(time_point deadline, std::stop_token stop) {
    std::unique_lock guard(lock_);
    ++waiters_;
    moved_.notify_all();
    moved_.wait(guard, stop, [&] { return now_ >= deadline; });
    --waiters_;
    return now_ >= deadline;
}

Clock::TimerId ManualClock::call_at(time_point deadline, std::function<void()> action) {
    std::lock_guard guard(lock_);
    const TimerId id = next_id_++;
    timers_.emplace(deadline, std::make_pair(id, std::move(action)));
    return id;
}

void ManualClock::cancel(TimerId timer) {
    std::unique_lock guard(lock_);
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
        if (it->second.first == timer) {
            timers_.erase(it);
            return;
        }
    }
    // Running inside advance() on another thread right now: wait until the action is over.
    if (firing_ == timer && std::this_thread::get_id() != firing_thread_)
        moved_.wait(guard, [&] { return firing_ != timer; });
}

void ManualClock::advance(duration step) {
    std::unique_lock guard(lock_);
    const time_point target = now_ + step;
    while (!timers_.empty() && timers_.begin()->first <= target) {
        auto due = timers_.begin();
        if (due->first > now_) now_ = due->first;
        auto [id, action] = std::move(due->second);
        timers_.erase(due);
        firing_ = id;
        firing_thread_ = std::this_thread::get_id();
        moved_.notify_all();
        guard.unlock();
        action();
        guard.lock();
        firing_ = 0;
        moved_.notify_all();
    }
    now_ = target;
    moved_.notify_all();
}

std::size_t ManualClock::waiters() const {
    std::lock_guard guard(lock_);
    return waiters_;
}

}  // namespace acemq
