#include "rfc3339.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace acemq::detail {

void append_rfc3339(std::string& out, std::chrono::system_clock::time_point when, SecondFraction fraction) {
    using std::chrono::microseconds;
    const auto micros = std::chrono::floor<microseconds>(when).time_since_epoch().count();
    auto seconds = static_cast<std::time_t>(micros / 1'000'000);
    auto part = micros % 1'000'000;
    if (part < 0) {
        part += 1'000'000;
        --seconds;
    }
    // Spans come thousands a second: the date and time of day are worked out (gmtime_r and
    // a printf) once per second per thread, only the fraction for each.
    struct Second {
        std::time_t seconds = 0;
        bool known = false;
        char text[80];
        std::size_t length = 0;
    };
    thread_local Second last;
    if (!last.known || last.seconds != seconds) {
        std::tm utc{};
        gmtime_r(&seconds, &utc);
        const int length =
            std::snprintf(last.text, sizeof last.text, "%04d-%02d-%02dT%02d:%02d:%02d", utc.tm_year + 1900,
                          utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
        last.length = std::min(static_cast<std::size_t>(length), sizeof last.text - 1);
        last.seconds = seconds;
        last.known = true;
    }
    out.append(last.text, last.length);
    if (fraction != SecondFraction::none) {
        const int digits = fraction == SecondFraction::millis ? 3 : 6;
        if (fraction == SecondFraction::millis) part /= 1000;
        char text[7] = {'.'};
        for (int i = digits; i >= 1; --i, part /= 10) text[i] = static_cast<char>('0' + part % 10);
        out.append(text, static_cast<std::size_t>(digits) + 1);
    }
    out += 'Z';
}

std::string rfc3339(std::chrono::system_clock::time_point when, SecondFraction fraction) {
    std::string out;
    append_rfc3339(out, when, fraction);
    return out;
}

}  // namespace acemq::detail
