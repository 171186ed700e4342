// URLs as they may be shown in an error or a log: with the password gone. Every message
// that prints a URL someone gave (connect(), a transport's address parsing) prints
// redacted_url(url) instead, so a password never reaches a log. Thread-safe (pure).
#pragma once

#include <string>
#include <string_view>

namespace acemq {

// `url` with its userinfo replaced by "***": "amqp://guest:pw@host/" becomes
// "amqp://***@host/". Everything from the start of the authority up to the LAST '@' goes,
// because a password may itself hold an '@' or an unescaped '/' (a path holding an '@' is
// hidden too, which costs only some detail). The authority starts after "scheme:" and the
// slashes after it when the text starts (after any blanks) with a scheme, in any case and
// with any number of slashes ("AMQP://", "ampq://", "amqp:/" stay, so the reader sees what is
// wrong with them); otherwise at the first character, so "user:pw@host" becomes "***@host".
// "amqp:user:pw@host", with no slash, cannot be told from that, and becomes "***@host" too.
// A query, which may carry credentials too ("?password=..."), is shown as "?***". A URL
// with neither comes back unchanged.
std::string redacted_url(std::string_view url);

}  // namespace acemq
