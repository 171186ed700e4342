#include <acemq/clock.hpp>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

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

struct ManualClock::State {
    mutable std::mutex lock;
    std::condition_variable_any moved;
    time_point now;
    std::size_t waiters = 0;
    TimerId next_id = 1;
    std::multimap<time_point, std::pair<TimerId, std::function<void()>>> timers;
    TimerId firing = 0;  // the timer whose action advance() is running, so cancel() can wait it out
    std::thread::id firing_thread;
};

ManualClock::ManualClock(time_point start) : state_(std::make_unique<State>()) { state_->now = start; }
ManualClock::~ManualClock() = default;

Clock::time_point ManualClock::now() const {
    std::lock_guard guard(state_->lock);
    return state_->now;
}

bool ManualClock::wait_until(time_point deadline, std::stop_token stop) {
    std::unique_lock guard(state_->lock);
    ++state_->waiters;
    state_->moved.notify_all();
    state_->moved.wait(guard, stop, [&] { return state_->now >= deadline; });
    --state_->waiters;
    return state_->now >= deadline;
}

Clock::TimerId ManualClock::call_at(time_point deadline, std::function<void()> action) {
    std::lock_guard guard(state_->lock);
    const TimerId id = state_->next_id++;
    state_->timers.emplace(deadline, std::make_pair(id, std::move(action)));
    return id;
}

void ManualClock::cancel(TimerId timer) {
    std::unique_lock guard(state_->lock);
    for (auto it = state_->timers.begin(); it != state_->timers.end(); ++it) {
        if (it->second.first == timer) {
            state_->timers.erase(it);
            return;
        }
    }
    // Running inside advance() on another thread right now: wait until the action is over.
    if (state_->firing == timer && std::this_thread::get_id() != state_->firing_thread)
        state_->moved.wait(guard, [&] { return state_->firing != timer; });
}

void ManualClock::advance(duration step) {
    std::unique_lock guard(state_->lock);
    const time_point target = state_->now + step;
    while (!state_->timers.empty() && state_->timers.begin()->first <= target) {
        auto due = state_->timers.begin();
        if (due->first > state_->now) state_->now = due->first;
        auto [id, action] = std::move(due->second);
        state_->timers.erase(due);
        state_->firing = id;
        state_->firing_thread = std::this_thread::get_id();
        state_->moved.notify_all();
        guard.unlock();
        action();
        guard.lock();
        state_->firing = 0;
        state_->moved.notify_all();
    }
    state_->now = target;
    state_->moved.notify_all();
}

std::size_t ManualClock::waiters() const {
    std::lock_guard guard(state_->lock);
    return state_->waiters;
}

}  // namespace acemq
