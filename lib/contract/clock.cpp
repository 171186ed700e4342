#include <acemq/clock.hpp>

namespace acemq {

namespace {

// The timers and the thread that runs them, shared by the clock and that thread: the last
// owner of the clock may let go of it inside a timer action (a broker whose only owner was
// the action), and then the thread must finish that action and stop on its own.
struct TimerTable {
    void run() {
        std::unique_lock guard(lock);
        while (!stopping) {
            if (timers.empty()) {
                changed.wait(guard);
                continue;
            }
            auto earliest = timers.begin();
            // A copy: the wait lets go of the lock, and cancel() may erase the entry meanwhile.
            const Clock::time_point due = earliest->first;
            if (due > std::chrono::steady_clock::now()) {
                changed.wait_until(guard, due);
                continue;
            }
            auto [id, action] = std::move(earliest->second);
            timers.erase(earliest);
            firing = id;
            guard.unlock();
            action();
            guard.lock();
            firing = 0;
            changed.notify_all();
        }
    }

    std::mutex lock;
    std::condition_variable changed;
    std::multimap<Clock::time_point, std::pair<Clock::TimerId, std::function<void()>>> timers;
    Clock::TimerId next_id = 1;
    Clock::TimerId firing = 0;
    bool stopping = false;
};

class SystemClock final : public Clock {
public:
    ~SystemClock() override {
        {
            std::lock_guard guard(table_->lock);
            table_->stopping = true;
        }
        table_->changed.notify_all();
        if (!timer_thread_.joinable()) return;
        // Released inside a timer action: the thread cannot join itself; it holds the table
        // and stops once the action returns.
        if (timer_thread_.get_id() == std::this_thread::get_id())
            timer_thread_.detach();
        else
            timer_thread_.join();
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
        std::lock_guard guard(table_->lock);
        if (!timer_thread_.joinable()) timer_thread_ = std::thread([table = table_] { table->run(); });
        const TimerId id = table_->next_id++;
        table_->timers.emplace(deadline, std::make_pair(id, std::move(action)));
        table_->changed.notify_all();
        return id;
    }

    void cancel(TimerId timer) override {
        std::unique_lock guard(table_->lock);
        auto& timers = table_->timers;
        for (auto it = timers.begin(); it != timers.end(); ++it) {
            if (it->second.first == timer) {
                timers.erase(it);
                return;
            }
        }
        // Already taken by the timer thread: wait until its action is over, unless this
        // call comes from that action itself.
        if (table_->firing == timer && std::this_thread::get_id() != timer_thread_.get_id())
            table_->changed.wait(guard, [&] { return table_->firing != timer; });
    }

private:
    std::shared_ptr<TimerTable> table_ = std::make_shared<TimerTable>();
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
